"""How often MXNet 1.9.1 calls a custom operator's prop, made with the real MXNet.

Run with the MXNet venv (Python 3.8, numpy < 1.24)::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_custom_calls.py

It writes ``tests/golden/custom/calls.json``: for each scenario (``infer_shape``,
``infer_type``, ``simple_bind``, ``forward``, ``backward`` of a graph of custom operators) the
number of calls each prop method got. The ops and the scenarios are functions of the ``mx``
module, so ``tests/operator/test_custom_calls.py`` runs the very same code with symgraph.
MXNet is imported only when this file runs as a script.
"""
import collections
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'custom', 'calls.json')
COUNTED = ('infer_shape', 'infer_type', 'create_operator', 'forward', 'backward')


def define_ops(mx, calls):
    """Register ``cc_double`` and ``cc_pair``; ``calls`` counts the method calls they get."""

    class Double(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            calls['forward'] += 1
            self.assign(out_data[0], req[0], in_data[0] * 2)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            calls['backward'] += 1
            self.assign(in_grad[0], req[0], out_grad[0] * 2)

    @mx.operator.register('cc_double')
    class DoubleProp(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            calls['infer_shape'] += 1
            return in_shape, [in_shape[0]], []

        def infer_type(self, in_type):
            calls['infer_type'] += 1
            return in_type, [in_type[0]], []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            calls['create_operator'] += 1
            return Double()

    class Pair(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            calls['forward'] += 1
            self.assign(out_data[0], req[0], in_data[0] + in_data[1])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            calls['backward'] += 1
            self.assign(in_grad[0], req[0], out_grad[0])
            self.assign(in_grad[1], req[1], out_grad[0])

    @mx.operator.register('cc_pair')
    class PairProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ['a', 'b']

        def infer_shape(self, in_shape):
            calls['infer_shape'] += 1
            return [in_shape[0], in_shape[0]], [in_shape[0]], []

        def infer_type(self, in_type):
            calls['infer_type'] += 1
            return [in_type[0], in_type[0]], [in_type[0]], []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            calls['create_operator'] += 1
            return Pair()


def build_graphs(mx):
    """name -> Symbol: one custom op; two in a chain; one feeding a built-in op."""
    x = mx.sym.var('x')
    one = mx.sym.Custom(x, op_type='cc_double', name='d')
    chain = mx.sym.Custom(mx.sym.Custom(x, op_type='cc_double', name='d1'), mx.sym.var('y'),
                          op_type='cc_pair', name='p')
    mixed = mx.sym.sum(mx.sym.Custom(mx.sym.FullyConnected(x, num_hidden=3, name='fc'),
                                     op_type='cc_double', name='d2'))
    return {'one': one, 'chain': chain, 'mixed': mixed}


SHAPES = {'one': {'x': (2, 3)}, 'chain': {'x': (2, 3), 'y': (2, 3)},
          'mixed': {'x': (2, 4)}}


def run_scenarios(mx, calls):
    """{graph: {scenario: {method: count}}}: the calls each step made (not cumulative)."""
    out = {}
    for name, sym in build_graphs(mx).items():
        shapes = SHAPES[name]
        rec = {}

        def take(scenario):
            mx.nd.waitall()     # MXNet runs custom ops on its own threads
            rec[scenario] = {k: calls[k] for k in COUNTED}
            calls.clear()

        calls.clear()
        sym.infer_shape(**shapes)
        take('infer_shape')
        sym.infer_type(**{k: np.float32 for k in shapes})
        take('infer_type')
        exe = sym.simple_bind(mx.cpu(), **shapes)
        take('simple_bind')
        for k, arr in exe.arg_dict.items():
            arr[:] = np.arange(arr.size).reshape(arr.shape) % 5
        exe.forward(is_train=True)
        take('forward')
        exe.backward([mx.nd.ones(o.shape) for o in exe.outputs])
        take('backward')
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones(o.shape) for o in exe.outputs])
        take('second_step')
        out[name] = rec
    return out


def main():
    import mxnet as mx
    calls = collections.Counter()
    define_ops(mx, calls)
    res = run_scenarios(mx, calls)
    mx.nd.waitall()
    res['_meta'] = {'mxnet': mx.__version__, 'python': sys.version.split()[0]}
    with open(OUT, 'w') as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write('\n')
    print('wrote', OUT)


if __name__ == '__main__':
    main()
