"""Golden data for the rounding of a quantized residual sum (``_sg_mkldnn_conv`` with
``with_sum``), made with MXNet 1.9.1's CPU build (oneDNN): MXNet's sum post-op adds the
summand times its scale in one fused multiply-add (one rounding), which a separate float32
multiply and add (two) misses in about one element in 10**5. The network (a conv-relu, a
conv-bn whose output adds that relu's, a relu, a float-output fully connected layer) is
quantized by ``quantize_model_mkldnn`` (naive calibration); the seed is one whose test
batch has such an element (found by trying seeds with symgraph's NumPy path both ways).

Run with MXNet's interpreter (the path given as the first argument, or $MXNET_PYTHON)::

    python tests/golden/make_int8_sum.py /path/to/mxnet/python

Writes tests/golden/data/quantization/int8_sum.npz: the quantized symbol's JSON (``json``),
the parameters it quantized offline (``arg:fc_*_quantize*``; :func:`model` makes the others
and the test batch from the seed) and MXNet's output on the test batch (``out``).
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'quantization', 'int8_sum.npz')
SEED = int(os.environ.get('INT8_SUM_SEED', 62))
SHAPE = (4, 16, 16, 16)


def network(mx):
    data = mx.sym.var('data')
    a = mx.sym.Convolution(data, num_filter=32, kernel=(1, 1), no_bias=True, name='c0')
    a = mx.sym.Activation(a, act_type='relu', name='r0')
    b = mx.sym.Convolution(a, num_filter=32, kernel=(3, 3), pad=(1, 1), no_bias=True,
                           name='c1')
    b = mx.sym.BatchNorm(b, fix_gamma=False, name='bn1')
    s = mx.sym.Activation(mx.sym.elemwise_add(b, a, name='add'), act_type='relu', name='r1')
    return mx.sym.FullyConnected(mx.sym.Flatten(s), num_hidden=2, name='fc')


def model(mx, np, seed):
    """The float network's parameters, calibration and test batches (data in [0, 1))."""
    sym = network(mx)
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=SHAPE)
    args, auxs = {}, {}
    for name, shape in zip(sym.list_arguments(), arg_shapes):
        if name.endswith('gamma'):
            v = rng.uniform(0.5, 1.5, shape)
        elif name.endswith(('beta', 'bias')):
            v = rng.uniform(-0.1, 0.1, shape)
        elif name != 'data':
            v = rng.normal(0, (2.0 / np.prod(shape[1:])) ** 0.5, shape)
        if name != 'data':
            args[name] = mx.nd.array(v.astype(np.float32))
    for name, shape in zip(sym.list_auxiliary_states(), aux_shapes):
        v = rng.uniform(0.5, 1.5, shape) if name.endswith('var') else \
            rng.uniform(-0.1, 0.1, shape)
        auxs[name] = mx.nd.array(v.astype(np.float32))
    calib = rng.uniform(0, 1, (2 * SHAPE[0],) + SHAPE[1:]).astype(np.float32)
    test = rng.uniform(0, 1, SHAPE).astype(np.float32)
    return sym, args, auxs, calib, test


def quantized(mx, np, seed):
    """(quantized symbol, its arguments, auxiliary states, test batch)."""
    sym, args, auxs, calib, test = model(mx, np, seed)
    qsym, qargs, qauxs = mx.contrib.quantization.quantize_model_mkldnn(
        sym, args, auxs, label_names=None, ctx=mx.cpu(), calib_mode='naive',
        calib_data=mx.io.NDArrayIter(calib, batch_size=SHAPE[0]),
        num_calib_examples=calib.shape[0], quantized_dtype='auto')
    return qsym, qargs, qauxs, test


def run(mx, qsym, qargs, qauxs, test):
    given = dict(qargs, data=mx.nd.array(test))
    exe = qsym.bind(mx.cpu(), {k: given[k] for k in qsym.list_arguments()},
                    aux_states={k: qauxs[k] for k in qsym.list_auxiliary_states()},
                    grad_req='null')
    return exe.forward(is_train=False)[0].asnumpy()


def main():
    python = sys.argv[1] if len(sys.argv) > 1 else os.environ.get('MXNET_PYTHON')
    if python and os.path.abspath(python) != os.path.abspath(sys.executable):
        subprocess.check_call([python, os.path.abspath(__file__)])
        return
    import mxnet as mx
    import mxnet.contrib.quantization  # noqa: F401
    import numpy as np
    qsym, qargs, qauxs, test = quantized(mx, np, SEED)
    args = model(mx, np, SEED)[1]
    arrays = {'json': np.array(qsym.tojson()), 'seed': np.array(SEED),
              'out': run(mx, qsym, qargs, qauxs, test)}
    arrays.update(('arg:' + k, v.asnumpy()) for k, v in qargs.items() if k not in args)
    np.savez_compressed(OUT, **arrays)


if __name__ == '__main__':
    main()
