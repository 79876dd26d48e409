"""The examples in the docstrings of symgraph and its operators run and give what they say."""
import doctest
import importlib
import os
import pkgutil
import re

import pytest

import symgraph
import symgraph.ops

# every module of every subpackage (graph/, operator/, dist/, ops/, ...), recursively
MODULES = sorted(
    [m.name for m in pkgutil.walk_packages(symgraph.__path__, 'symgraph.')
     if m.name != 'symgraph.__main__'] +
    ['symgraph.ops.' + m.name for m in pkgutil.iter_modules(symgraph.ops.__path__)])


@pytest.mark.parametrize('name', MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, '%d docstring example(s) failed in %s' % (result.failed, name)


def test_there_are_docstring_examples():
    total = 0
    for name in MODULES:
        finder = doctest.DocTestFinder()
        total += sum(len(t.examples) for t in finder.find(importlib.import_module(name)))
    assert total >= 10


@pytest.mark.parametrize('package', ['symgraph.io', 'symgraph.metric', 'symgraph.module',
                                     'symgraph.optimizer'])
def test_subpackages_are_walked_and_have_examples(package):
    # the per-package doctest files the training stack first had are replaced by this walk
    names = [n for n in MODULES if n == package or n.startswith(package + '.')]
    assert len(names) > 1, names
    finder = doctest.DocTestFinder()
    assert sum(len(t.examples) for n in names
               for t in finder.find(importlib.import_module(n))) >= 1


GUIDE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'docs',
                     'operators.md')


def test_operator_guide_examples():
    """docs/operators.md: the worked example's user-API session runs and gives what it says."""
    result = doctest.testfile(GUIDE, module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 8 and result.failed == 0, result


def test_operator_guide_shows_the_registered_code():
    """The class and the OpCase/golden rows the guide prints are the ones in the tree."""
    with open(GUIDE) as f:
        blocks = re.findall(r'```python\n(.*?)```', f.read(), re.S)
    root = os.path.dirname(GUIDE)
    sources = {}
    for rel in ('../ops/unary.py', '../tests/ops/test_unary.py',
                '../tests/golden/graphs_compute.py'):
        with open(os.path.join(root, rel)) as f:
            sources[rel] = f.read()
    code = [b for b in blocks if '>>>' not in b]
    assert len(code) == 3
    for block in code:
        assert any(block in text for text in sources.values()), block[:80]
