"""Write ``cupy_api.json``: the CuPy API surface that ``strict_cupy`` enforces.

Run where the real CuPy imports (no GPU needed), from outside the checkout so that the
repository's ``cuda/`` folder does not shadow NVIDIA's ``cuda`` package::

    cd /tmp && python /path/to/tests/cuda/make_cupy_api.py [--check]

It records, for the modules symgraph may touch (``cupy``, ``cupy.linalg``,
``cupy.random``, ``cupy.lib.stride_tricks``, ``cupyx.scipy.special``), every public name with its kind and, where
CuPy exposes one, its parameter list; the methods and attributes of ``cupy.ndarray``
with their parameters (parsed from the Cython docstrings); and each ufunc's arity,
type loops and which of ``reduce``/``accumulate``/``at`` CuPy really implements.
The committed JSON keeps the stand-in's checks independent of the CuPy installed.
"""
import importlib
import inspect
import json
import os
import re
import sys

import numpy

MODULES = ('cupy', 'cupy.linalg', 'cupy.random', 'cupy.fft', 'cupy.lib.stride_tricks',
           'cupyx.scipy.special')
#: CuPy's ufunc.reduce/accumulate exist only for these (NotImplementedError otherwise)
_REDUCE = {'add', 'multiply'}
_ACCUMULATE = {'add', 'multiply'}
_DOC_SIG = re.compile(r'^[\w.]+\((.*)\)')


def _params_from_text(text):
    """Parameter names of a ``name(a, b=1, *args, **kw)`` text; None if unparsable."""
    params, varkw = [], False
    for part in text.split(','):
        part = part.strip()
        if not part or part in ('/', '*'):
            continue
        if part.startswith('**'):
            varkw = True
            continue
        if part.startswith('*'):
            params.append(part)
            continue
        name = re.match(r'^(?:[\w.]+\s+)?(\w+)', part)
        if not name:
            return None
        params.append(name.group(1))
    if params and params[0] == 'self':
        params = params[1:]
    return {'params': params, 'varkw': varkw}


def _signature(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        doc = (getattr(obj, '__doc__', None) or '').strip().splitlines()
        m = _DOC_SIG.match(doc[0]) if doc else None
        return _params_from_text(m.group(1)) if m else None
    params, varkw = [], False
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            varkw = True
        elif p.kind is p.VAR_POSITIONAL:
            params.append('*' + p.name)
        else:
            params.append(p.name)
    if params and params[0] == 'self':
        params = params[1:]
    return {'params': params, 'varkw': varkw}


def _ufunc(name, u):
    short = name.rpartition('.')[2]
    return {'kind': 'ufunc', 'nin': u.nin, 'nout': u.nout, 'types': list(u.types),
            'reduce': short in _REDUCE, 'accumulate': short in _ACCUMULATE,
            'at': bool(getattr(u, '_scatter_op', None))}


def describe_module(modname):
    mod = importlib.import_module(modname)
    out = {}
    for name in sorted(dir(mod)):
        if name.startswith('_'):
            continue
        obj = getattr(mod, name)
        kind = type(obj).__name__
        if kind == 'ufunc':
            out[name] = _ufunc(name, obj)
        elif kind in ('module', '_LazyModule'):
            continue        # submodules: the stand-in emulates those in MODULES only
        elif isinstance(obj, type):
            same = getattr(numpy, name, None) is obj
            out[name] = {'kind': 'numpy_type' if same else 'class'}
            if not same:    # e.g. cupy.random.RandomState: which methods exist
                out[name]['methods'] = sorted(m for m in dir(obj) if not m.startswith('_')
                                              and callable(getattr(obj, m, None)))
        elif callable(obj):
            entry = {'kind': 'function'}
            sig = _signature(obj)
            if sig is not None:
                entry.update(sig)
            out[name] = entry
        elif isinstance(obj, (int, float, bool, str)) or obj is None:
            out[name] = {'kind': 'constant'}
        else:
            out[name] = {'kind': 'object'}
    return out


def describe_ndarray():
    import cupy
    out = {}
    for name in sorted(dir(cupy.ndarray)):
        if name.startswith('_') and not name.startswith('__'):
            continue
        obj = getattr(cupy.ndarray, name)
        if callable(obj) and not isinstance(obj, type):
            entry = {'kind': 'method'}
            sig = _signature(obj)
            if sig is not None:
                entry.update(sig)
        else:
            entry = {'kind': 'attribute'}
        out[name] = entry
    return out


# Names every Python class has, whose presence and signatures change with the Python
# version (3.11 gave object __getstate__, 3.12 added the buffer protocol's __buffer__ and
# __release_buffer__): not CuPy's API, so a snapshot taken on one Python still checks on another.
_PYTHON_OWN = set(dir(object)) | {'__getstate__', '__buffer__', '__release_buffer__'}


def _cupy_own(members):
    # a special method is compared by its presence and kind only: whether inspect can read
    # the signature of a Cython slot wrapper (__add__ ...) depends on the Python version
    # (3.13 reads '(object)' where 3.12 reads none), not on CuPy
    return {k: ({'kind': v['kind']} if k.startswith('__') and k.endswith('__') else v)
            for k, v in members.items() if k not in _PYTHON_OWN}


def main(argv):
    import cupy
    api = {'cupy_version': cupy.__version__, 'numpy_version': numpy.__version__,
           'modules': {m: describe_module(m) for m in MODULES},
           'ndarray': describe_ndarray()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'cupy_api.json')
    if '--check' in argv:
        with open(path, encoding='utf-8') as f:
            saved = json.load(f)
        if saved['cupy_version'] != api['cupy_version']:
            print('snapshot of CuPy %s, CuPy %s installed' % (saved['cupy_version'],
                                                               api['cupy_version']))
            return 77
        stale = [m for m in MODULES if saved['modules'].get(m) != api['modules'][m]]
        if _cupy_own(saved['ndarray']) != _cupy_own(api['ndarray']):
            stale.append('ndarray')
        print('stale: %s' % ', '.join(stale) if stale else 'up to date')
        return 1 if stale else 0
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(api, f, indent=0, sort_keys=True)
        f.write('\n')
    print('wrote %s (CuPy %s: %s)' % (path, cupy.__version__, ', '.join(
        '%s %d names' % (m, len(v)) for m, v in api['modules'].items())))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
