"""Golden outputs of GluonCV's resnetv1b.py (tests/gluon/thirdparty/, unchanged) under
MXNet 1.9.1, for tests/gluon/test_gluoncv.py.

    MXNET_PYTHON=<venv with mxnet 1.9.1>/bin/python
    $MXNET_PYTHON tests/golden/gluoncv_probes.py

The same functions run under symgraph in the test (``probe(mx, module)``): every parameter
is set from a NumPy RandomState seeded by its name's CRC32, so nothing large is stored.
"""
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'gluoncv', 'resnetv1b.npz')
#: (constructor, keyword arguments, input shape)
NETS = (('resnet18_v1b', {}, (4, 3, 48, 48)),
        ('resnet50_v1d', {}, (1, 3, 48, 48)),
        ('resnet50_v1s', {}, (1, 3, 40, 40)))


def set_params(net):
    for name, p in sorted(net.collect_params().items()):
        rng = np.random.RandomState(zlib.crc32(name.encode()) & 0x7fffffff)
        shape = p.shape
        if name.endswith('running_var') or name.endswith('gamma'):
            v = rng.uniform(0.5, 1.5, shape)
        elif name.endswith('weight'):
            v = rng.normal(0, np.sqrt(2.0 / max(1, int(np.prod(shape[1:])))), shape)
        else:
            v = rng.uniform(-0.1, 0.1, shape)
        p.set_data(v.astype(np.float32))


def probe(mx, module):
    """{key: array} of each network: its output on a fixed input (inference), the
    parameter names, and the input gradient of sum(output * w) in training mode."""
    out = {}
    for fn, kwargs, shape in NETS:
        net = getattr(module, fn)(**kwargs)
        net.initialize()
        x = mx.nd.array(np.random.RandomState(7).uniform(-1, 1, shape))
        net(x)                      # deferred shapes
        set_params(net)
        out[fn + ':names'] = np.array(sorted(net.collect_params().keys()))
        out[fn + ':infer'] = net(x).asnumpy()
        net.hybridize()
        out[fn + ':infer_hybrid'] = net(x).asnumpy()
        x.attach_grad()
        w = mx.nd.array(np.random.RandomState(8).uniform(-1, 1, out[fn + ':infer'].shape))
        # the input gradient with the running statistics (a deep net's batch statistics
        # over one image's 2x2 last stage are too ill-conditioned to compare in float32)
        with mx.autograd.record(train_mode=False):
            y = net(x)
        y.backward(w)
        out[fn + ':dx'] = x.grad.asnumpy()
        if shape[0] > 1:        # and in training mode, where the batch is large enough
            with mx.autograd.record():
                y = net(x)
            y.backward(w)
            out[fn + ':dx_train'] = x.grad.asnumpy()
    return out


def main():
    import importlib.util
    import mxnet as mx
    spec = importlib.util.spec_from_file_location(
        'resnetv1b', os.path.join(HERE, '..', 'gluon', 'thirdparty', 'resnetv1b.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    res = probe(mx, module)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    np.savez_compressed(OUT, **res)
    print('wrote', OUT, sorted(res))
    sys.stdout.flush()
    os._exit(0)     # MXNet may hang at exit (MXNET_SEMANTICS.md)


if __name__ == '__main__':
    main()
