"""What MXNet 1.9.1's ``autograd.get_symbol`` returns for results of hybridized blocks.

Run from any checkout with MXNet's interpreter (or set ``MXNET_PYTHON`` to it)::

    MXNET_PYTHON=/path/to/mxnet/python python tests/golden/gluon_get_symbol_probes.py

Writes ``tests/golden/data/gluon_get_symbol.json``: for every case of :data:`CASES` (built
and recorded by :func:`record`, the same code here and in the tests) the operators of the
returned graph in its JSON node order, and how many arguments, auxiliary states and outputs
it has, once with ``hybridize()``'s default ``inline_limit`` (2) and once with
``inline_limit=100``. MXNet inlines a block's graph of at most ``inline_limit`` operators;
a larger one stays one ``_CachedOp`` node. Its names (``var<k>`` by a process-wide counter,
``node_<k>``) are not compared.

This module imports MXNet only when run: the tests import :func:`record` and :data:`CASES`.
"""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'gluon_get_symbol.json')

#: case -> what :func:`record` builds and which result it returns
CASES = ('dense_then_imperative', 'dense_output', 'dense_batchnorm_square',
         'two_outputs_sum', 'two_outputs_second')


def _blocks(mx):
    class DenseTanh(mx.gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.d = mx.gluon.nn.Dense(3, in_units=4)

        def hybrid_forward(self, F, x):
            return F.tanh(self.d(x))

    class TwoOut(mx.gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.d = mx.gluon.nn.Dense(3, in_units=4)

        def hybrid_forward(self, F, x):
            h = self.d(x)
            return F.sigmoid(h), h * 3
    return DenseTanh, TwoOut


def record(mx, case, inline_limit=2):
    """Build the case's hybridized block, run it under ``autograd.record()`` and return
    ``(result, inputs)``: the array whose symbol is asked, and the arrays the symbol's
    arguments stand for, in the order our ``get_symbol`` names them (``var0``, ...)."""
    dense_tanh, two_out = _blocks(mx)
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.uniform(-1, 1, (5, 4)))
    if case == 'dense_batchnorm_square':
        net = mx.gluon.nn.HybridSequential()
        with net.name_scope():
            net.add(mx.gluon.nn.Dense(3, in_units=4), mx.gluon.nn.BatchNorm(in_channels=3))
    else:
        net = two_out() if case.startswith('two') else dense_tanh()
    net.initialize(mx.init.Uniform(0.5))
    net.hybridize(inline_limit=inline_limit)
    x.attach_grad()
    with mx.autograd.record():
        out = net(x)
        if case == 'dense_then_imperative':
            res = mx.nd.tanh(out) * 2
        elif case == 'dense_output':
            res = out
        elif case == 'dense_batchnorm_square':
            res = out * out
        elif case == 'two_outputs_sum':
            res = out[0] + out[1]
        else:
            res = out[1]
    params = list(net.collect_params().values())
    if case == 'dense_batchnorm_square':
        inputs = [x] + [p.data() for p in params[:4]] + [p.data() for p in params[4:]]
    else:
        inputs = [x] + [p.data() for p in params]
    return res, inputs


def describe(sym):
    """The operators in JSON node order and the numbers of arguments, auxiliary states
    and outputs of ``sym``."""
    ops = [n['op'] for n in json.loads(sym.tojson())['nodes'] if n['op'] != 'null']
    return {'ops': ops, 'arguments': len(sym.list_arguments()),
            'aux_states': len(sym.list_auxiliary_states()),
            'outputs': len(sym.list_outputs())}


def main():
    import mxnet as mx
    out = {}
    for case in CASES:
        out[case] = {}
        for key, limit in (('default', 2), ('inlined', 100)):
            res, _ = record(mx, case, limit)
            out[case][key] = describe(mx.autograd.get_symbol(res))
    with open(OUT, 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write('\n')
    print('wrote', OUT)


if __name__ == '__main__':
    try:
        import mxnet  # noqa: F401
    except ImportError:
        py = os.environ.get('MXNET_PYTHON')
        if not py:
            sys.exit('gluon_get_symbol_probes.py: mxnet is not importable here; set '
                     'MXNET_PYTHON to a Python with MXNet 1.9.1')
        sys.exit(subprocess.call([py] + sys.argv))
    main()
