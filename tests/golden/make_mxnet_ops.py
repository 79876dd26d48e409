"""Write MXNet 1.9.1's list of registered operator names (canonical names and aliases, as
``MXListAllOpNames`` returns them) to ``data/mxnet_ops.json``, with each name's canonical
operator. Read by ``tests/ops/test_mxnet_registry.py``. Python 3.8 compatible.

    cd tests/golden && MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON make_mxnet_ops.py
"""
import ctypes
import json
import os

import mxnet as mx
from mxnet.base import _LIB, c_str, check_call, mx_uint, py_str


def _canonical(name):
    """The real name MXNet resolves ``name`` to (an alias's operator)."""
    handle = ctypes.c_void_p()
    check_call(_LIB.NNGetOpHandle(c_str(name), ctypes.byref(handle)))
    real, desc, kv, rt = (ctypes.c_char_p() for _ in range(4))
    num = mx_uint()
    names, types, descs = (ctypes.POINTER(ctypes.c_char_p)() for _ in range(3))
    check_call(_LIB.MXSymbolGetAtomicSymbolInfo(
        handle, ctypes.byref(real), ctypes.byref(desc), ctypes.byref(num),
        ctypes.byref(names), ctypes.byref(types), ctypes.byref(descs), ctypes.byref(kv),
        ctypes.byref(rt)))
    return py_str(real.value)


def main():
    size = mx_uint()
    plist = ctypes.POINTER(ctypes.c_char_p)()
    check_call(_LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(plist)))
    names = sorted(py_str(plist[i]) for i in range(size.value))
    out = {'mxnet_version': mx.__version__,
           'source': 'MXListAllOpNames of MXNet %s (CPU build, MXNET_MKLDNN_ENABLED=0)'
                     % mx.__version__,
           'ops': {n: _canonical(n) for n in names}}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'mxnet_ops.json')
    with open(path, 'w') as f:
        json.dump(out, f, indent=0, sort_keys=True)
        f.write('\n')
    print('%d names written to %s' % (len(names), path))


if __name__ == '__main__':
    main()
