"""The docstring examples of the optimizer and kvstore subpackages (tests/test_doctests.py
covers the top-level modules only)."""
import doctest
import importlib
import pkgutil

import pytest

import symgraph.kvstore
import symgraph.optimizer

MODULES = sorted(['symgraph.optimizer.' + m.name
                  for m in pkgutil.iter_modules(symgraph.optimizer.__path__)] +
                 ['symgraph.kvstore.' + m.name
                  for m in pkgutil.iter_modules(symgraph.kvstore.__path__)])


@pytest.mark.parametrize('name', MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, '%d docstring example(s) failed in %s' % (result.failed, name)


def test_there_are_examples():
    finder = doctest.DocTestFinder()
    total = sum(len(t.examples) for name in MODULES
                for t in finder.find(importlib.import_module(name)))
    assert total >= 5
