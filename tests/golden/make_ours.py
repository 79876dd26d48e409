"""Write checkpoints with symgraph for MXNet 1.9.1 to load (``make_graphs.py --verify-ours``).

    python tests/golden/make_ours.py                      # writes tests/golden/ours/
    MXNET_MKLDNN_ENABLED=0 /path/to/mxnet-venv/bin/python tests/golden/make_graphs.py \
        --verify-ours tests/golden/ours > tests/golden/ours/mxnet_verified.txt

``tests/golden/test_ours.py`` rebuilds the same files and checks they are unchanged, so
the MXNet verification recorded in ``mxnet_verified.txt`` stays true.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = os.path.join(HERE, 'ours')


def build(mx):
    """{prefix: (symbol, input shapes, train)} of the graphs written for MXNet."""
    with mx.name.NameManager():       # automatic names start from 0 every time
        return _build(mx)


def _build(mx):
    data = mx.sym.var('data')
    h = mx.sym.FullyConnected(data, num_hidden=6, name='fc1')
    h = mx.sym.Activation(h, act_type='tanh', name='act1')
    h = mx.sym.FullyConnected(h, num_hidden=3, name='fc2')
    mlp = mx.sym.broadcast_div(h * 2.0 - 1, mx.sym.var('scale', shape=(1, 3)))

    x = mx.sym.var('data')
    c = mx.sym.Convolution(x, num_filter=4, kernel=(3, 3), pad=(1, 1), name='conv')
    c = mx.sym.BatchNorm(c, fix_gamma=False, name='bn')
    c = mx.sym.Activation(c, act_type='relu', name='relu')
    c = mx.sym.Pooling(c, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool')
    c = mx.sym.Flatten(c, name='flat')
    c = mx.sym.FullyConnected(c, num_hidden=5, name='fc')
    conv = mx.sym.softmax(c, axis=-1, name='prob')

    s = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=4, name='fc')
    loss = mx.sym.SoftmaxOutput(s, name='softmax')
    return {'mlp': (mlp, {'data': (5, 7), 'scale': (1, 3)}, True),
            'convbn': (conv, {'data': (2, 3, 6, 6)}, False),
            'softmax': (loss, {'data': (6, 3), 'softmax_label': (6,)}, True)}


def one_ulp_apart(values, seed):
    """float32 ``values`` with every element moved one ulp up or down at random."""
    towards = np.where(np.random.RandomState(seed).rand(*values.shape) < 0.5,
                       np.float32(-np.inf), np.float32(np.inf)).astype(np.float32)
    return np.nextafter(values.astype(np.float32), towards)


def write(mx, directory, perturb=None):
    """Write every checkpoint and its ``-io.npz``; with ``perturb`` (a seed) the inputs,
    parameters and auxiliary states are first moved by one ulp (:func:`one_ulp_apart`):
    how far the outputs then move measures the float32 sensitivity of each value
    (``test_ours.py`` allows a multiple of it)."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.RandomState(0)
    for prefix, (sym, shapes, train) in build(mx).items():
        exe = sym.simple_bind(mx.cpu(), grad_req='write' if train else 'null', **shapes)
        args, aux, io = {}, {}, {}
        for name, arr in exe.arg_dict.items():
            if name == 'softmax_label':
                arr[:] = rng.randint(0, 4, arr.shape)
            else:
                arr[:] = rng.uniform(0.5, 1.5, arr.shape) if name == 'scale' else \
                    rng.uniform(-1, 1, arr.shape)
                if perturb is not None:
                    arr[:] = one_ulp_apart(arr.asnumpy(), perturb)
            if name in shapes:
                io['in:' + name] = arr.asnumpy()
            else:
                args[name] = arr
        for name, arr in exe.aux_dict.items():
            arr[:] = rng.uniform(0.5, 1.5, arr.shape)
            if perturb is not None:
                arr[:] = one_ulp_apart(arr.asnumpy(), perturb)
            aux[name] = arr
        outs = exe.forward(is_train=train)
        for i, o in enumerate(outs):
            io['out:%d' % i] = o.asnumpy()
        if train:
            heads = None
            if prefix != 'softmax':
                heads = [mx.nd.array(rng.uniform(-1, 1, o.shape)) for o in outs]
                for i, h in enumerate(heads):
                    io['head:%d' % i] = h.asnumpy()
            exe.backward(heads)
            for name, g in exe.grad_dict.items():
                io['grad:' + name] = g.asnumpy()
        mx.model.save_checkpoint(os.path.join(directory, prefix), 0, sym, args, aux)
        np.savez(os.path.join(directory, prefix + '-io.npz'), **io)


if __name__ == '__main__':
    sys.path.insert(0, os.path.join(HERE, '..', '..'))
    import symgraph
    write(symgraph, OURS)
    print('wrote', OURS)
