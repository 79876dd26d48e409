"""MXNet 1.9.1's call signatures of every public function of ``mx.sym`` and ``mx.nd`` and
their operator namespaces (``contrib``, ``linalg``, ``random``, ``image``), as
``inspect.signature`` gives them: the parameters in the order positional arguments bind,
through ``name``/``attr``/``out``. Python 3.8 compatible::

    python tests/golden/make_call_signatures.py      # $MXNET_PYTHON or this python

runs itself under ``$MXNET_PYTHON`` when the current interpreter cannot import MXNet, and
writes ``data/call_signatures.json``: ``{"sym.<path>": {"params": [[name, kind]],
"op": operator name or null}}``, kind one of ``pos`` (positional or keyword), ``*``
(``*args``), ``kw`` (keyword only) and ``**``. Read by ``tests/symbol/test_call_signatures.py``.
"""
import inspect
import json
import os
import subprocess
import sys

try:
    import mxnet as mx
except ImportError:
    mx = None

KINDS = {inspect.Parameter.POSITIONAL_ONLY: 'pos',
         inspect.Parameter.POSITIONAL_OR_KEYWORD: 'pos',
         inspect.Parameter.VAR_POSITIONAL: '*', inspect.Parameter.KEYWORD_ONLY: 'kw',
         inspect.Parameter.VAR_KEYWORD: '**'}
NAMESPACES = ('', 'contrib', 'linalg', 'random', 'image')


#: operator-name prefix of each namespace's generated functions
PREFIX = {'': '', 'contrib': '_contrib_', 'linalg': '_linalg_', 'random': '_random_',
          'image': '_image_'}


def _op_name(ns, func):
    """The operator a generated function creates (MXNet compiles those from text, so their
    code comes from '<string>'), or None for a function written in Python."""
    if func.__code__.co_filename != '<string>':
        return None
    return PREFIX[ns] + func.__name__


def _record(kind, ns, name, func):
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    params = [[p.name, KINDS[p.kind]] for p in sig.parameters.values()]
    return {'params': params, 'op': _op_name(ns, func)}


def main():
    out = {}
    for kind, root in (('sym', mx.sym), ('nd', mx.nd)):
        for ns in NAMESPACES:
            mod = getattr(root, ns) if ns else root
            for name in sorted(dir(mod)):
                if name.startswith('_'):
                    continue
                func = getattr(mod, name)
                if not inspect.isfunction(func):
                    continue
                rec = _record(kind, ns, name, func)
                if rec is not None:
                    out['%s.%s%s' % (kind, ns + '.' if ns else '', name)] = rec
    dest = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                        'call_signatures.json')
    with open(dest, 'w') as f:
        json.dump({'mxnet_version': mx.__version__, 'functions': out}, f, indent=0,
                  sort_keys=True)
    print('wrote %s: %d functions' % (dest, len(out)))


if __name__ == '__main__':
    if mx is None:
        py = os.environ.get('MXNET_PYTHON')
        if not py:
            sys.exit('make_call_signatures.py: mxnet is not importable here; set '
                     'MXNET_PYTHON to a Python with MXNet 1.9.1')
        sys.exit(subprocess.call([py] + sys.argv))
    main()
