"""symgraph.config: the one reader of the SYMGRAPH_* switches, its table, and the rules
around it (no other module of the package names a switch; docs/config.md is the table)."""
import ast
import glob
import io
import os
import re
import tokenize

import pytest

from symgraph import config
from symgraph.config import SWITCHES, flag, names, number, choice, parse, path

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
#: the folders installed as the package (setup.cfg's package_dir)
PACKAGE = ('symgraph', 'ops', 'cuda')


def _py_files(*folders):
    for folder in folders:
        yield from sorted(glob.glob(os.path.join(ROOT, folder, '**', '*.py'), recursive=True))


# ---------------------------------------------------------------------------- parsing
@pytest.mark.parametrize('text, want', [('1', True), ('on', True), (' TRUE ', True),
                                        ('yes', True), ('0', False), ('off', False),
                                        ('False', False), ('no', False), ('none', False)])
def test_flag_words(monkeypatch, text, want):
    monkeypatch.setenv('SYMGRAPH_TRAINING_FUSION', text)
    assert flag('TRAINING_FUSION') is want


def test_unset_or_empty_is_the_default(monkeypatch):
    monkeypatch.delenv('SYMGRAPH_DIST_OVERLAP', raising=False)
    assert flag('DIST_OVERLAP') is True
    assert flag('DIST_OVERLAP', False) is False         # a call's own default
    monkeypatch.setenv('SYMGRAPH_DIST_OVERLAP', '  ')
    assert flag('DIST_OVERLAP') is True
    monkeypatch.delenv('SYMGRAPH_DIST_TIMEOUT', raising=False)
    assert number('DIST_TIMEOUT') == 300.0 and number('DIST_TIMEOUT', 7) == 7
    monkeypatch.delenv('SYMGRAPH_ONEDNN_LIB', raising=False)
    assert path('ONEDNN_LIB') is None


@pytest.mark.parametrize('name, text, message', [
    ('TRAINING_LAYOUT', 'maybe',
     r"SYMGRAPH_TRAINING_LAYOUT must be 0 or 1 \(also off/false/no/none; on/true/yes\), "
     "got 'maybe'"),
    ('ONEDNN', '2', "SYMGRAPH_ONEDNN must be 0 or 1 .*got '2'"),
    ('DIST_TIMEOUT', 'soon', "SYMGRAPH_DIST_TIMEOUT must be a number of seconds, got 'soon'"),
    ('DIST_TIMEOUT', '0', "SYMGRAPH_DIST_TIMEOUT must be > 0 seconds, got '0'"),
    ('DIST_BUCKET_MB', 'nan', "SYMGRAPH_DIST_BUCKET_MB must be > 0 megabytes, got 'nan'"),
    ('DIST_ALLREDUCE', 'tree', "SYMGRAPH_DIST_ALLREDUCE must be mpi or ring, got 'tree'"),
    ('INFERENCE_PASSES', 'fuse,fold',
     "SYMGRAPH_INFERENCE_PASSES='fuse,fold': unknown word 'fold'; .* must be a "
     "comma-separated list of dead_nodes, fold_bn, fuse, layout"),
])
def test_unknown_values_name_the_variable_and_the_accepted_words(monkeypatch, name, text,
                                                                  message):
    with pytest.raises(ValueError, match=message):
        parse(name, text)
    monkeypatch.setenv('SYMGRAPH_' + name, text)       # and read from the environment
    reader = {'flag': flag, 'number': number, 'choice': choice, 'names': names}
    with pytest.raises(ValueError, match=message):
        reader[SWITCHES[name].kind](name)


def test_numbers_choices_names_and_paths():
    assert parse('DIST_BUCKET_MB', ' 0.5 ') == 0.5
    assert parse('DIST_ALLREDUCE', 'Ring') == 'ring'
    assert parse('ONEDNN_LIB', ' /x/libdnnl.so.3 ') == '/x/libdnnl.so.3'
    assert parse('ONEDNN_LIB', '') is None
    # a list of names comes back in the table's order; on words all, off words or '' none
    assert parse('INFERENCE_PASSES', 'layout, FUSE') == ('fuse', 'layout')
    for text in ('all', '1', 'yes'):
        assert parse('INFERENCE_PASSES', text) == SWITCHES['INFERENCE_PASSES'].words
    for text in ('', '0', 'none', ' , '):
        assert parse('INFERENCE_PASSES', text) == ()
    assert parse('INFERENCE_PASSES', None) == SWITCHES['INFERENCE_PASSES'].words


def test_a_switch_read_as_another_kind_or_an_unknown_name_is_an_error():
    with pytest.raises(TypeError, match='SYMGRAPH_DIST_TIMEOUT is a number switch, not a flag'):
        flag('DIST_TIMEOUT')
    with pytest.raises(KeyError, match='no switch SYMGRAPH_ONEDN; the switches are .*ONEDNN'):
        flag('ONEDN')
    assert config.env_name('ONEDNN') == 'SYMGRAPH_ONEDNN'


def test_raw_is_the_value_as_written(monkeypatch):
    monkeypatch.setenv('SYMGRAPH_ONEDNN', ' Off')
    assert config.raw('ONEDNN') == ' Off' and flag('ONEDNN') is False


# ---------------------------------------------------------------------------- the table
def test_the_table_agrees_with_the_modules_that_read_it():
    from symgraph.dist import mpi
    from symgraph.graph import passes
    from symgraph.kvstore import dist
    assert SWITCHES['DIST_TIMEOUT'].default == mpi.DEFAULT_TIMEOUT
    assert SWITCHES['DIST_ALLREDUCE'].words == mpi.ALGORITHMS
    assert SWITCHES['DIST_BUCKET_MB'].default == dist.DEFAULT_BUCKET_MB
    assert SWITCHES['INFERENCE_PASSES'].words == passes.PASSES
    assert passes.ENV == 'SYMGRAPH_INFERENCE_PASSES'
    assert passes.TRAINING_FUSION_ENV == 'SYMGRAPH_TRAINING_FUSION'
    for s in SWITCHES.values():
        assert s.kind in ('flag', 'number', 'choice', 'names', 'path', 'count'), s
        assert s.scope in ('package', 'tests') and s.meaning and s.read, s
        assert re.fullmatch('[A-Z0-9_]+', s.name), s


def test_docs_config_md_is_the_table():
    with open(os.path.join(ROOT, 'docs', 'config.md'), encoding='utf-8') as f:
        text = f.read()
    assert config.table_markdown() in text, \
        'docs/config.md differs from symgraph.config: paste config.table_markdown() into it'


def test_config_imports_nothing_of_the_package():
    with open(os.path.join(ROOT, 'symgraph', 'config.py'), encoding='utf-8') as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert not node.level and node.module in ('typing',), node.module
        elif isinstance(node, ast.Import):
            assert [a.name for a in node.names] == ['os'], ast.dump(node)


# ---------------------------------------------------------------------------- one reader
#: the name of a switch (or its prefix alone) as a value of its own: what reading,
#: setting or building a variable name needs; prose (docstrings, messages) is longer
_VAR = re.compile(r'SYMGRAPH_[A-Z0-9_]*')


def _switch_names_in_code(path):
    """(line, text) of every string literal in ``path`` that is a switch's variable name by
    itself (an f-string: its text before the first field)."""
    with open(path, 'rb') as f:
        tokens = list(tokenize.tokenize(f.readline))
    out = []
    for tok in tokens:
        if tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):       # an f-string before Python 3.12
                value = re.sub(r'^[a-zA-Z]*[\'"]+', '', tok.string).split('{')[0]
        elif tok.type == getattr(tokenize, 'FSTRING_MIDDLE', None):
            value = tok.string.split('{')[0]
        else:
            continue
        if isinstance(value, str) and _VAR.fullmatch(value.strip()):
            out.append((tok.start[0], tok.string))
    return out


def test_only_config_names_a_switch_in_the_package():
    found = []
    for p in _py_files(*PACKAGE):
        if os.path.normpath(p) == os.path.normpath(os.path.join(ROOT, 'symgraph', 'config.py')):
            continue
        found += ['%s:%d: %s' % (os.path.relpath(p, ROOT), line, text)
                  for line, text in _switch_names_in_code(p)]
    assert not found, ('SYMGRAPH_* switches are read through symgraph.config only '
                       '(config.flag(...), config.env_name(...)):\n' + '\n'.join(found))


def test_the_rule_finds_what_it_forbids(tmp_path):
    bad = tmp_path / 'bad.py'
    bad.write_text("import os\nA = os.environ.get('SYMGRAPH_ONEDNN')\n"
                   "B = os.environ['SYMGRAPH_' + 'X']\nC = f'SYMGRAPH_{name}'\n"
                   "'''A docstring naming SYMGRAPH_ONEDNN=0 is prose.'''\n"
                   "D = 'oneDNN off (SYMGRAPH_ONEDNN=%s)'\n")
    assert [line for line, _ in _switch_names_in_code(str(bad))] == [2, 3, 4]


def test_no_package_module_reads_the_environment_for_a_switch():
    # os.environ / os.getenv with anything mentioning SYMGRAPH, however the name is built
    found = []
    for p in _py_files(*PACKAGE):
        if p.endswith(os.path.join('symgraph', 'config.py')):
            continue
        with open(p, encoding='utf-8') as f:
            for k, line in enumerate(f, 1):
                if re.search(r'(environ|getenv)\b.*SYMGRAPH', line) and \
                        not line.strip().startswith(('>>>', '...')):     # (a doctest's own)
                    found.append('%s:%d: %s' % (os.path.relpath(p, ROOT), k, line.strip()))
    assert not found, '\n'.join(found)


#: SYMGRAPH_ words in the scanned files that are not switches: a doctest's scratch variable
NOT_SWITCHES = {'SYMGRAPH_DOC_EXAMPLE'}


def _scanned_files():
    """The package, the scripts, benchmarks, examples and docs, and the test files that
    read switches for the suite (conftests, the emulator harness, the golden generators);
    other test files set switches the table already lists, or scratch variables of their
    own."""
    for folder in ('symgraph', 'ops', 'cuda', 'bench', 'scripts', 'examples', 'docs'):
        yield from glob.glob(os.path.join(ROOT, folder, '**', '*'), recursive=True)
    yield from glob.glob(os.path.join(ROOT, 'tests', '**', 'conftest.py'), recursive=True)
    yield from glob.glob(os.path.join(ROOT, 'tests', 'cuda', '*harness*.py'))
    yield from glob.glob(os.path.join(ROOT, 'tests', 'golden', '*.py'))
    yield os.path.join(ROOT, 'README.md')


def test_every_switch_named_anywhere_is_in_the_table():
    seen = {}
    for p in _scanned_files():
        if not p.endswith(('.py', '.sh', '.md')):
            continue
        with open(p, encoding='utf-8', errors='replace') as f:
            for word in re.findall(r'SYMGRAPH_[A-Z0-9_]*[A-Z0-9]', f.read()):
                seen.setdefault(word, os.path.relpath(p, ROOT))
    assert 'SYMGRAPH_STRICT_CUPY' in seen and 'SYMGRAPH_ONEDNN' in seen     # (it scans)
    known = {s.var for s in SWITCHES.values()} | NOT_SWITCHES
    unknown = {w: where for w, where in seen.items() if w not in known}
    assert not unknown, 'switches missing from symgraph.config.SWITCHES: %s' % unknown


def test_tokenize_reads_every_package_file():
    # the rule above must not skip a file it cannot read
    for p in _py_files(*PACKAGE):
        with open(p, 'rb') as f:
            list(tokenize.tokenize(io.BytesIO(f.read()).readline))
