"""Golden data of ``mx.rnn`` cells from MXNet 1.9.1.

Run from the repository root with MXNet's interpreter::

    $MXNET_PYTHON tests/golden/make_rnn_cells.py

Writes ``tests/golden/data/rnn_cells.{json,npz}``: for each cell configuration (built by
``CELLS`` in tests/rnn/cell_configs.py, shared with the tests), the unrolled symbol's
arguments, outputs, inferred shapes, and its forward outputs (inference) for random
parameters and data; and FusedRNNCell's packed parameters unpacked by MXNet.
"""
import json
import os
import sys

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'rnn'))
from cell_configs import CELLS, LENGTH, DATA_SHAPE, flatten   # noqa: E402


def main():
    meta, store = {}, {}
    for k, (name, build) in enumerate(sorted(CELLS.items())):
        with mx.name.NameManager():      # automatic names count from 0 for each cell
            cell, layout = build(mx)
            outs, states = cell.unroll(LENGTH, mx.sym.var('data'), layout=layout,
                                       merge_outputs=True)
        sym = mx.sym.Group([outs] + flatten(states))
        shape = DATA_SHAPE[layout]
        arg_shapes, out_shapes, _ = sym.infer_shape(data=shape)
        rng = np.random.RandomState(k)
        args = {n: rng.uniform(-0.5, 0.5, s).astype(np.float32)
                for n, s in zip(sym.list_arguments(), arg_shapes)}
        exe = sym.bind(mx.cpu(), {n: mx.nd.array(v) for n, v in args.items()})
        res = [o.asnumpy() for o in exe.forward(is_train=False)]
        meta[name] = dict(arguments=sym.list_arguments(), outputs=sym.list_outputs(),
                          arg_shapes=arg_shapes, out_shapes=out_shapes,
                          state_info=[None if i is None else
                                      {a: (list(b) if isinstance(b, tuple) else b)
                                       for a, b in i.items()} for i in cell.state_info])
        for n, v in args.items():
            store[name + '|arg|' + n] = v
        for i, v in enumerate(res):
            store['%s|out|%d' % (name, i)] = v
        unpacked = cell.unpack_weights({n: mx.nd.array(v) for n, v in args.items()
                                        if n != 'data'})
        meta[name]['unpacked'] = sorted(unpacked)
        for n, v in unpacked.items():
            store[name + '|unpacked|' + n] = v.asnumpy()
    np.savez_compressed(os.path.join(HERE, 'data', 'rnn_cells.npz'), **store)
    with open(os.path.join(HERE, 'data', 'rnn_cells.json'), 'w') as f:
        json.dump(dict(cells=meta, mxnet=mx.__version__), f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
