"""Golden values of array-with-scalar arithmetic on integer (and float16) arrays.

MXNet casts the scalar to the array's dtype first (an int32 array times 1.5 is the array
times 1) and computes in that dtype. Run with MXNet 1.9.1 (Python 3.8 compatible)::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_int_scalar.py

writes ``tests/golden/data/int_scalar.json``: per (dtype, scalar, operation) the input,
and the output of the symbol (bound executor) and of ``mx.nd`` arithmetic.
"""
import json
import os

import numpy as np
import mxnet as mx

from int_scalar_ops import OPS

VALUES = [-7, -3, -1, 0, 1, 2, 5, 9]


def cases():
    for dt in ('int32', 'int64', 'uint8', 'float16'):
        for s in (1.5, 2, -2.5, 0.5, 3):
            if dt == 'uint8' and s < 0:
                continue                      # C's cast of a negative double: undefined
            for name in sorted(OPS):
                v = np.array(VALUES)
                if dt == 'uint8':
                    v = np.abs(v)
                if name in ('rdiv', 'rmod'):
                    v = v[v != 0]             # integer division by zero kills MXNet
                if name in ('div', 'mod') and dt != 'float16' and int(s) == 0:
                    continue
                if name == 'pow' and dt != 'float16':
                    v = np.abs(v)
                yield dt, s, name, v


def main():
    out = []
    x = mx.sym.var('x')
    for dt, s, name, v in cases():
        arr = mx.nd.array(v, dtype=dt)
        exe = OPS[name](x, s).bind(mx.cpu(), {'x': arr})
        sym_out = exe.forward()[0]
        nd_out = OPS[name](arr, s)
        out.append({'dtype': dt, 'scalar': s, 'op': name, 'input': v.tolist(),
                    'symbol': sym_out.asnumpy().tolist(), 'symbol_dtype': str(sym_out.dtype.__name__),
                    'nd': nd_out.asnumpy().tolist(), 'nd_dtype': str(nd_out.dtype.__name__)})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'int_scalar.json')
    with open(path, 'w') as f:
        json.dump({'mxnet': mx.__version__, 'cases': out}, f, indent=0)
    print('wrote %s: %d cases' % (path, len(out)))


if __name__ == '__main__':
    main()
