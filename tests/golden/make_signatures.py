"""MXNet 1.9.1's signatures of the generated operator functions (``mx.nd.<op>``): inputs,
then parameters, in the order positional arguments bind to them. Python 3.8 compatible::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_signatures.py NAMES

NAMES is a JSON list of operator names (symgraph's ``mx.opdef.list_ops(aliases=True)``);
writes ``tests/golden/data/signatures.json`` {name: [argument names]}.
"""
import inspect
import json
import os
import sys

import mxnet as mx


def signature(name):
    for mod, short in ((mx.nd, name), (mx.nd._internal, name),
                       (mx.nd.contrib, name[len('_contrib_'):])):
        f = getattr(mod, short, None)
        if f is not None:
            break
    else:
        return None
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return None
    names = []
    for p in params:
        if p.name in ('out', 'name') or p.kind is p.VAR_KEYWORD:
            break
        names.append('*' + p.name if p.kind is p.VAR_POSITIONAL else p.name)
    return names


def main():
    with open(sys.argv[1]) as f:
        names = json.load(f)
    sigs = {n: s for n, s in ((n, signature(n)) for n in names) if s is not None}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'signatures.json')
    with open(path, 'w') as f:
        json.dump({'mxnet': mx.__version__, 'signatures': sigs}, f, indent=0, sort_keys=True)
    print('wrote %s: %d operators' % (path, len(sigs)))


if __name__ == '__main__':
    main()
