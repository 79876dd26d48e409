"""The examples in the docstrings of symgraph and its operators run and give what they say."""
import doctest
import importlib
import pkgutil

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
