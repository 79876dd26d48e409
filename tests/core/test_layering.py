"""The layering rules of docs/architecture.md, enforced by parsing every module's imports.

Function-local imports count like module-level ones: a local import that hides a cycle is
still a cycle.
"""
import ast
import os
import glob

import networkx as nx

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')

STDLIB_OK = {'math', 'itertools', 'functools', 'operator', 'numbers', 'collections',
             'dataclasses', 'typing', 'warnings', 'threading', 'importlib', 'pkgutil',
             '__future__', 'ast', 'json', 'os', 're', 'sys', 'weakref', 'logging', 'io'}
#: installed folder -> package name (setup.cfg's package_dir)
FOLDERS = (('symgraph', 'symgraph'), ('ops', 'symgraph.ops'), ('cuda', 'symgraph.cuda'))


def _imports(path):
    """(module name, level, is_module_level) for every import in a file."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    top = set(id(n) for n in tree.body)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, 0, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ''
            if node.level and not mod:
                out += [(a.name, node.level, id(node) in top) for a in node.names]
            else:
                out.append((mod, node.level, id(node) in top))
                # ``from pkg import sub`` imports the submodule pkg.sub too
                out += [(mod + '.' + a.name, node.level, id(node) in top) for a in node.names]
    return out


def _modules():
    """{dotted module name: (path, is_package)} of everything installed as symgraph."""
    mods = {}
    for folder, pkg in FOLDERS:
        base = os.path.join(ROOT, folder)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in ('__pycache__', 'emu')]
            for f in filenames:
                if not f.endswith('.py'):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), base)[:-3].split(os.sep)
                if rel[-1] == '__init__':
                    rel = rel[:-1]
                mods['.'.join([pkg] + rel)] = (os.path.join(dirpath, f), f == '__init__.py')
    return mods


MODULES = _modules()


def _resolve(module, is_package, name, level):
    """The symgraph module an import names (relative ones resolved), or None."""
    if level:
        parts = module.split('.') if is_package else module.split('.')[:-1]
        parts = parts[:len(parts) - (level - 1)]
        name = '.'.join(parts + ([name] if name else []))
    while name and name not in MODULES:
        name = name.rpartition('.')[0]
    return name or None


def _edges():
    """(importer, imported, is_module_level) over the package's own modules."""
    out = []
    for mod, (path, is_pkg) in MODULES.items():
        for name, level, top in _imports(path):
            target = _resolve(mod, is_pkg, name, level)
            # a module importing its own package (or itself) is not an edge between modules
            if target is None or target == mod or mod.startswith(target + '.'):
                continue
            out.append((mod, target, top))
    return out


EDGES = _edges()


def test_the_module_graph_is_found():
    assert {'symgraph.graph.infer', 'symgraph.dist.workers', 'symgraph.operator.api',
            'symgraph.ops.nn', 'symgraph.cuda.loader', 'symgraph.symbol.symbol',
            'symgraph.ndarray.ndarray', 'symgraph.ndarray.serialization',
            'symgraph.namespaces'} <= set(MODULES)
    assert ('symgraph.executor', 'symgraph.graph.plan', True) in EDGES


def test_no_import_cycles_local_imports_included():
    g = nx.DiGraph((a, b) for a, b, _ in EDGES)
    cycles = list(nx.simple_cycles(g))
    assert not cycles, 'import cycles: %s' % cycles


#: who may import whom, by package: graph <- ndarray <- symbol <- executor/operator/... .
#: (module, allowed symgraph modules, by prefix). ``FOUNDATION`` is open to everyone.
FOUNDATION = ('symgraph.base', 'symgraph.opdef', 'symgraph.context', 'symgraph.name',
              'symgraph.attribute', 'symgraph.util', 'symgraph.config',
              'symgraph.progress',
              # mx.profiler: the recorder every layer reports to (it imports the
              # foundation only, and reaches the CPU backend through opdef.cpu_backend())
              'symgraph.profiler')
RESERVED = ('symgraph.module', 'symgraph.optimizer', 'symgraph.io', 'symgraph.kvstore',
            'symgraph.rnn', 'symgraph.metric', 'symgraph.lr_scheduler', 'symgraph.callback',
            'symgraph.monitor', 'symgraph.contrib')
RULES = {
    'symgraph.graph': ('symgraph.graph',),
    'symgraph.namespaces': (),
    'symgraph.visualization': ('symgraph.graph', 'symgraph.viz'),
    # mx.viz.diff and mx.viz.plot_memory: graph diffs and storage plans drawn as SVG
    'symgraph.viz': ('symgraph.viz', 'symgraph.graph'),
    # ndarray/serialization.py (the .params format) imports nothing else of the package
    'symgraph.ndarray.serialization': (),
    'symgraph.ndarray': ('symgraph.ndarray', 'symgraph.graph', 'symgraph.namespaces'),
    'symgraph.symbol': ('symgraph.symbol', 'symgraph.graph', 'symgraph.namespaces',
                        'symgraph.visualization', 'symgraph.ndarray', 'symgraph.executor'),
    'symgraph.executor': ('symgraph.graph', 'symgraph.ndarray'),
    'symgraph.operator': ('symgraph.graph', 'symgraph.ndarray', 'symgraph.operator'),
    'symgraph.dist': ('symgraph.ndarray', 'symgraph.dist', 'symgraph.cuda'),
    'symgraph.random': ('symgraph.ndarray', 'symgraph.namespaces'),
    'symgraph.initializer': ('symgraph.ndarray',),
    # mx.image: functions over the image operators through mx.nd; ImageIter reads
    # mx.recordio files and is an mx.io.DataIter
    'symgraph.image': ('symgraph.image', 'symgraph.ndarray', 'symgraph.recordio',
                       'symgraph.io'),
    # mx.recordio: the RecordIO format on the foundation alone; im2rec packs images with it
    'symgraph.recordio': (),
    'symgraph.im2rec': ('symgraph.recordio', 'symgraph.image', 'symgraph.ndarray'),
    # model re-exports the kvstore helpers of MXNet's model.py (_create_kvstore ...)
    'symgraph.model': ('symgraph.ndarray', 'symgraph.symbol', 'symgraph.kvstore'),
    'symgraph.test_utils': ('symgraph.ndarray', 'symgraph.symbol', 'symgraph.executor',
                            'symgraph.io', 'symgraph.random', 'symgraph.runtime',
                            'symgraph.test_utils'),
    # mx.engine (bulk sizes) and mx.runtime (Features) stand on the foundation alone
    'symgraph.engine': (),
    'symgraph.runtime': (),
    # python -m symgraph onnx-check runs symgraph/onnx/onnx_check.py
    'symgraph.__main__': ('symgraph.symbol', 'symgraph.visualization',
                          'symgraph.ndarray.serialization', 'symgraph.onnx'),
    'symgraph.context': ('symgraph.cuda',),
    # the launcher only starts mpiexec
    'symgraph.launch': (),
    # native CPU backends (oneDNN via ctypes): stdlib, numpy and each other only; operators
    # reach them through symgraph.opdef.cpu_backend(), never by import
    'symgraph.backend': ('symgraph.backend',),
    # mx.autograd: the tape lives in ndarray/tape.py (mx.nd records without importing
    # autograd); get_symbol builds a Symbol; its higher-order rules call mx.nd
    'symgraph.autograd': ('symgraph.ndarray', 'symgraph.symbol', 'symgraph.autograd_rules'),
    'symgraph.autograd_rules': ('symgraph.ndarray',),
    # mx.np: only its refusal (the foundation's NotSupportedError)
    'symgraph.numpy': (),
}
#: what the reserved homes (training stack) may import
RESERVED_MAY_IMPORT = ('symgraph.symbol', 'symgraph.ndarray', 'symgraph.executor',
                       'symgraph.initializer', 'symgraph.model', 'symgraph.random',
                       'symgraph.namespaces', 'symgraph.recordio') + RESERVED
#: the kvstore reduces over devices with the ring all-reduce of symgraph.dist
RULES['symgraph.kvstore'] = RESERVED_MAY_IMPORT + ('symgraph.dist',)
#: Module runs its devices' threads in the device group of symgraph.dist.workers
RULES['symgraph.module'] = RESERVED_MAY_IMPORT + ('symgraph.dist',)
#: mx.contrib.amp rewrites graphs of nodes (graph/), patches mx.sym / mx.nd, converts the
#: symbols of a BucketingModule; its Gluon half scales a Trainer's loss (telling it from an
#: Optimizer) and converts a HybridBlock
RULES['symgraph.contrib'] = ('symgraph.contrib', 'symgraph.graph', 'symgraph.symbol',
                             'symgraph.ndarray', 'symgraph.module', 'symgraph.gluon',
                             'symgraph.optimizer', 'symgraph.onnx')
#: mx.contrib.quantization: the int8 graph rewrite (graph/), calibration runs of the float
#: model over a DataIter (io), Gluon's quantize_net exports and reloads a checkpoint (model)
RULES['symgraph.contrib.quantization'] = RULES['symgraph.contrib'] + ('symgraph.io',
                                                                      'symgraph.model')
#: mx.contrib.autograd: MXNet's first autograd API, a thin layer over mx.autograd
RULES['symgraph.contrib.autograd'] = ('symgraph.autograd', 'symgraph.ndarray')
#: mx.contrib.svrg_optimization: a Module subclass and its optimizers (a training-stack home)
RULES['symgraph.contrib.svrg_optimization'] = RESERVED_MAY_IMPORT
#: mx.gluon sits on top: Blocks trace into Symbols that the executor runs, record on the
#: autograd tape, and its Trainer drives the optimizers and kvstores
RULES['symgraph.gluon'] = ('symgraph.gluon', 'symgraph.autograd') + RESERVED_MAY_IMPORT + (
    'symgraph.dist',)
#: mx.onnx: exports Symbols (inferring shapes with graph/), loads .params, imports ONNX
#: files into Symbols and Gluon blocks; mx.contrib.onnx is its alias
RULES['symgraph.onnx'] = ('symgraph.onnx', 'symgraph.graph', 'symgraph.symbol',
                          'symgraph.ndarray', 'symgraph.executor', 'symgraph.operator',
                          'symgraph.gluon', 'symgraph.namespaces')
#: gluon.data's record and vision datasets read mx.recordio and decode with mx.image
RULES['symgraph.gluon.data'] = RULES['symgraph.gluon'] + ('symgraph.recordio', 'symgraph.image')


def _rule(mod):
    for prefix in sorted(RULES, key=len, reverse=True):
        if mod == prefix or mod.startswith(prefix + '.'):
            return RULES[prefix]
    if mod.startswith(RESERVED):
        return RESERVED_MAY_IMPORT
    return None


def _under(mod, prefixes):
    return any(mod == p or mod.startswith(p + '.') for p in prefixes)


def test_imports_follow_the_documented_direction():
    bad = []
    for a, b, _ in EDGES:
        if a == 'symgraph' or a.startswith(('symgraph.ops', 'symgraph.cuda')):
            continue                # the package __init__ assembles everything
        if _under(b, FOUNDATION) and not _under(a, FOUNDATION):
            continue
        allowed = _rule(a)
        if _under(a, FOUNDATION):
            # opdef.cpu_backend() loads symgraph.backend lazily
            allowed = FOUNDATION + ('symgraph.cuda', 'symgraph.backend')
        assert allowed is not None, 'module %s has no layering rule: add it to RULES' % a
        if not _under(b, allowed):
            bad.append('%s imports %s' % (a, b))
    assert not bad, 'imports against the documented direction:\n' + '\n'.join(bad)


def test_graph_ndarray_symbol_never_import_the_training_stack():
    for a, b, _ in EDGES:
        if _under(a, ('symgraph.graph', 'symgraph.ndarray', 'symgraph.symbol',
                      'symgraph.executor')):
            assert not _under(b, RESERVED), '%s imports %s' % (a, b)


def test_only_gluon_and_amp_import_gluon():
    # mx.gluon is the top of the stack: below it, only contrib.amp (its Gluon half) and
    # mx.onnx.import_to_gluon (a SymbolBlock of the imported graph) use it
    for a, b, _ in EDGES:
        if _under(b, ('symgraph.gluon',)):
            assert a == 'symgraph' or _under(a, ('symgraph.gluon', 'symgraph.contrib',
                                                 'symgraph.onnx.import_onnx')), (a, b)


def test_graph_never_imports_arrays_symbols_or_operators():
    for a, b, _ in EDGES:
        if _under(a, ('symgraph.graph',)):
            assert not _under(b, ('symgraph.ndarray', 'symgraph.symbol', 'symgraph.ops',
                                  'symgraph.operator', 'symgraph.executor')), (a, b)


def _files(folder):
    return sorted(glob.glob(os.path.join(ROOT, folder, '*.py')))


def test_core_never_imports_the_operators():
    for path in glob.glob(os.path.join(ROOT, 'symgraph', '**', '*.py'), recursive=True):
        if os.path.basename(path) == '__init__.py':
            continue
        for mod, level, _ in _imports(path):
            bad = mod == 'ops' and level == 1 or mod.startswith('symgraph.ops') \
                or (level == 1 and mod.startswith('ops'))
            assert not bad, '%s imports the operators (%s)' % (path, mod)


def test_core_imports_optional_packages_lazily():
    for path in glob.glob(os.path.join(ROOT, 'symgraph', '**', '*.py'), recursive=True):
        for mod, _, top in _imports(path):
            if mod.split('.')[0] in ('cupy', 'cupyx', 'graphviz', 'cupy_backends', 'mpi4py'):
                assert not top, '%s imports %s at module level' % (path, mod)


def test_operators_use_only_the_operator_api():
    # symgraph.cuda (kernels) only lazily; the rest of the core never; Pillow (the optional
    # image codec of ops/image_io.py's decoders) only lazily
    allowed = ('numpy', 'symgraph.opdef', 'symgraph.base', 'symgraph.cuda', 'PIL')
    for path in _files('ops'):
        for mod, level, top in _imports(path):
            if level:            # relative imports between operator modules
                continue
            root = mod.split('.')[0]
            assert root in STDLIB_OK or mod.startswith(allowed), \
                '%s imports %s; operators may use numpy and symgraph.opdef only' % (path, mod)
            if mod.startswith(('symgraph.cuda', 'PIL')):
                assert not top, '%s must import %s lazily' % (path, mod)


def test_backend_imports_only_stdlib_numpy_ctypes_and_itself():
    paths = glob.glob(os.path.join(ROOT, 'symgraph', 'backend', '**', '*.py'), recursive=True)
    assert paths
    for path in paths:
        for mod, level, _ in _imports(path):
            root = mod.split('.')[0]
            assert level or root in STDLIB_OK | {'numpy', 'ctypes'} \
                or mod == 'importlib.metadata', '%s imports %s' % (path, mod)


def test_backend_reaches_the_package_only_for_its_switches():
    # (relative imports above: within backend/, and symgraph.config, a stdlib-only leaf)
    for a, b, _ in EDGES:
        if _under(a, ('symgraph.backend',)):
            assert _under(b, ('symgraph.backend', 'symgraph.config')), '%s imports %s' % (a, b)


def test_only_opdef_imports_the_backend_and_lazily():
    for a, b, top in EDGES:
        if _under(b, ('symgraph.backend',)) and not _under(a, ('symgraph.backend',)):
            assert a == 'symgraph.opdef' and not top, '%s imports %s' % (a, b)


def test_cuda_imports_only_its_loaders_needs():
    for path in _files('cuda'):
        for mod, level, _ in _imports(path):
            root = mod.split('.')[0]
            assert level or root in STDLIB_OK | {'numpy', 'cupy', 'cupyx', 'cupy_backends',
                                                 'ctypes', 'hashlib', 'tempfile',
                                                 'subprocess', 'shutil', 'glob'} \
                or mod.startswith('symgraph.cuda'), '%s imports %s' % (path, mod)


def test_cuda_loader_imports_cupy_lazily():
    for path in _files('cuda'):
        for mod, _, top in _imports(path):
            if mod.split('.')[0] in ('cupy', 'cupyx', 'cupy_backends'):
                assert not top, '%s imports %s at module level' % (path, mod)


def test_cuda_sources_have_no_host_code():
    for path in glob.glob(os.path.join(ROOT, 'cuda', '*.cu')):
        with open(path) as f:
            text = f.read()
        assert '__global__' in text
        assert 'int main' not in text and 'cudaMalloc' not in text, path


def _private_members(paths):
    """Single-underscore names the classes in ``paths`` define (methods, ``__slots__``,
    attributes set on ``self``)."""
    names = set()
    for path in paths:
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for node in ast.walk(cls):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == '__slots__' for t in node.targets):
                    names.update(c.value for c in ast.walk(node.value)
                                 if isinstance(c, ast.Constant) and isinstance(c.value, str))
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                        and isinstance(node.value, ast.Name) and node.value.id == 'self':
                    names.add(node.attr)
    return {n for n in names if n.startswith('_') and not n.endswith('__')}


#: Symbol members MXNet itself spells with an underscore and calls from outside the class
#: (its rnn_cell.py and gluon call ``sym._set_attr(...)``): MXNet's API, not a reach-through
SYMBOL_MXNET_PRIVATE_API = {'_set_attr'}


def _reach_throughs(path, private):
    """(line, name) of ``x._name`` in ``path`` with ``_name`` in ``private``, ``x`` not
    ``self`` or ``cls``."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    return [(n.lineno, n.attr) for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr in private
            and not (isinstance(n.value, ast.Name) and n.value.id in ('self', 'cls'))]


def test_no_private_reach_through_into_symbol():
    # executor, visualization, contrib.amp, gluon ... read a Symbol through its public graph
    # view (Symbol.graph(), output_entries, input_values), never through its internals
    private = _private_members(glob.glob(os.path.join(ROOT, 'symgraph', 'symbol', '*.py')))
    private -= SYMBOL_MXNET_PRIVATE_API
    assert {'_outputs', '_arg_aux', '_known', '_order'} <= private     # (the rule sees them)
    bad, pending = [], dict(PENDING_REACH_THROUGHS)
    for mod, (path, _) in MODULES.items():
        if _under(mod, ('symgraph.symbol',)):
            continue
        own = _private_members([path])      # a module's own classes' members are its own
        rel = os.path.relpath(path, ROOT).replace(os.sep, '/')
        found = {name for _, name in _reach_throughs(path, private - own)}
        allowed = pending.pop(rel, set())
        assert allowed <= found, '%s no longer uses %s: strike it from ' \
            'PENDING_REACH_THROUGHS' % (rel, sorted(allowed - found))
        bad += ['%s:%d: .%s' % (rel, line, name)
                for line, name in _reach_throughs(path, private - own) if name not in allowed]
    assert not bad, 'private Symbol members used outside symbol/:\n' + '\n'.join(bad)


#: reach-throughs their owners are switching to the public view (file: names); each entry
#: must still be found, so that the list only shrinks
PENDING_REACH_THROUGHS = {}
