"""Golden values for tests/ndarray/test_mxnet_parity_ndarray.py and
tests/ops/test_mxnet_parity_ops.py, from MXNet 1.9.1:

    $MXNET_PYTHON tests/golden/make_mxnet_parity_opA.py

writes ``tests/golden/data/mxnet_parity_opA.json``: small cases where symgraph differed from
MXNet in its own unit tests (issue 29), each one MXNet-made value:

* ``pickle``: ``NDArray.__getstate__()['handle']`` (hex) of a few arrays, which symgraph
  must write byte for byte and unpickle;
* ``relu_nan_grad``: the gradient of ``mx.nd.relu`` and of ``Activation(act_type='relu')``
  at NaN, zero and signed inputs (``None`` stands for NaN);
* ``np_shape_json``: ``tojson()`` of a FullyConnected graph with a partly known weight
  shape, built with and without ``mx.np_shape(True)`` (``on`` / ``off``);
* ``mod_grad``: forward and both gradients of ``cast(a) % cast(b)`` in int32 and float32
  with zero divisors (head gradient 0.5);
* ``operator_arguments``: ``mx.operator.get_operator_arguments`` of a few operators;
* ``quantize``: ``mx.nd.contrib.quantize`` / ``dequantize`` of ``data`` with several ranges
  (``[min, max, out_type, q, min_out, max_out, dequantized]``);
* ``arange``: ``mx.nd.arange`` with fractional start and step in integer and float dtypes
  (``[args, repeat, dtype, values]``);
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'mxnet_parity_opA.json')


def _nan_list(a):
    return [None if np.isnan(v) else float(v) for v in np.asarray(a, np.float64).ravel()]


def make(mx):
    out = {'mxnet': mx.__version__}
    arrays = {
        'arange_2x3_float32': mx.nd.arange(6).reshape((2, 3)),
        'int64_3': mx.nd.array([1, -2, 3], dtype='int64'),
        'float64_scalarlike': mx.nd.array([2.5], dtype='float64'),
        'uint8_2x2': mx.nd.array([[0, 255], [7, 8]], dtype='uint8'),
    }
    out['pickle'] = {k: bytes(v.__getstate__()['handle']).hex() for k, v in arrays.items()}
    x = [1.0, float('nan'), 0.0, -2.0, float('inf')]
    grads = {}
    for name, fn in (('relu', lambda a: mx.nd.relu(a)),
                     ('Activation_relu', lambda a: mx.nd.Activation(a, act_type='relu'))):
        a = mx.nd.array(x)
        a.attach_grad()
        with mx.autograd.record():
            y = fn(a)
        y.backward()
        grads[name] = {'out': _nan_list(y.asnumpy()), 'grad': _nan_list(a.grad.asnumpy())}
    out['relu_nan_grad'] = {'x': _nan_list(x), 'cases': grads}
    out['np_shape_json'] = {}
    for flag in (False, True):
        with mx.np_shape(flag):
            w = mx.sym.var('weight', shape=(128, 0))
            net = mx.sym.FullyConnected(mx.sym.var('data'), w, num_hidden=128, name='fc')
            out['np_shape_json']['on' if flag else 'off'] = net.tojson()
    a_val, b_val = [[1, 2, 3], [4, -5, 0]], [[0, 1, 2], [-3, 0, 0]]
    out['mod_grad'] = {'a': a_val, 'b': b_val, 'cases': {}}
    for dt in ('int32', 'float32'):
        a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
        c = mx.sym.cast(a, dtype=dt) % mx.sym.cast(b, dtype=dt)
        ga, gb = mx.nd.empty((2, 3)), mx.nd.empty((2, 3))
        exe = c.bind(mx.cpu(), args={'a': mx.nd.array(a_val), 'b': mx.nd.array(b_val)},
                     args_grad=[ga, gb])
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones((2, 3)) * 0.5])
        out['mod_grad']['cases'][dt] = {'out': _nan_list(exe.outputs[0].asnumpy()),
                                        'grad_a': _nan_list(ga.asnumpy()),
                                        'grad_b': _nan_list(gb.asnumpy())}
    out['operator_arguments'] = {
        name: list(mx.operator.get_operator_arguments(name))
        for name in ('Activation', 'transpose', 'FullyConnected', 'Pooling', 'Concat')}
    data = np.array([[0.1392, 0.5928, -0.3], [0.6027, 0.8579, 0.0], [-1.2, 1.0, 0.25]],
                    np.float32)
    out['quantize'] = {'data': data.tolist(), 'cases': []}
    for lo, hi in ((0.0, 1.0), (-1.5, 1.2), (-0.5, 0.9)):
        for out_type in ('int8', 'uint8'):
            x = mx.nd.array(np.clip(data, lo, hi))
            q, qmin, qmax = mx.nd.contrib.quantize(x, mx.nd.array([lo]), mx.nd.array([hi]),
                                                   out_type=out_type)
            back = mx.nd.contrib.dequantize(q, qmin, qmax, out_type='float32')
            out['quantize']['cases'].append(
                [lo, hi, out_type, q.asnumpy().tolist(), float(qmin.asscalar()),
                 float(qmax.asscalar()), back.asnumpy().tolist()])
    out['arange'] = []
    for args in ((1.3, 45.6, 1.3), (50, -50, -7.7), (-1.5, 5, 1.5), (0.5, 300, 30.2),
                 (-5, 5, 1), (10,), (2.9, 7, 0.5)):
        for dtype in ('int32', 'uint8', 'int64', 'float32', 'float64'):
            for repeat in (1, 2):
                v = mx.nd.arange(*args, repeat=repeat, dtype=dtype).asnumpy()
                out['arange'].append([list(args), repeat, dtype, v.tolist()])
    return out


def main():
    import mxnet as mx
    data = make(mx)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, 'w') as f:
        json.dump(data, f, sort_keys=True)
        f.write('\n')
    print('wrote', OUT, file=sys.stderr)


if __name__ == '__main__':
    main()
