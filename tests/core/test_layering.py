"""The layering rules of STYLE.md, enforced by parsing every module's imports."""
import ast
import os
import glob

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')

STDLIB_OK = {'math', 'itertools', 'functools', 'operator', 'numbers', 'collections',
             'dataclasses', 'typing', 'warnings', 'threading', 'importlib', 'pkgutil',
             '__future__', 'ast', 'json', 'os', 're', 'sys', 'weakref', 'logging'}


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
    return out


def _files(folder):
    return sorted(glob.glob(os.path.join(ROOT, folder, '*.py')))


def test_core_never_imports_the_operators():
    for path in _files('symgraph'):
        if os.path.basename(path) == '__init__.py':
            continue
        for mod, level, _ in _imports(path):
            bad = mod == 'ops' and level == 1 or mod.startswith('symgraph.ops') \
                or (level == 1 and mod.startswith('ops'))
            assert not bad, '%s imports the operators (%s)' % (path, mod)


def test_core_imports_optional_packages_lazily():
    for path in _files('symgraph'):
        for mod, _, top in _imports(path):
            if mod.split('.')[0] in ('cupy', 'cupyx', 'graphviz', 'cupy_backends'):
                assert not top, '%s imports %s at module level' % (path, mod)


def test_operators_use_only_the_operator_api():
    # symgraph.cuda (kernels) and symgraph.parallel (SyncBatchNorm's all-reduce) only lazily
    allowed = ('numpy', 'symgraph.opdef', 'symgraph.base', 'symgraph.cuda', 'symgraph.parallel')
    for path in _files('ops'):
        for mod, level, top in _imports(path):
            if level:            # relative imports between operator modules
                continue
            root = mod.split('.')[0]
            assert root in STDLIB_OK or mod.startswith(allowed), \
                '%s imports %s; operators may use numpy and symgraph.opdef only' % (path, mod)
            if mod.startswith(('symgraph.cuda', 'symgraph.parallel')):
                assert not top, '%s must import %s lazily' % (path, mod)


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
