"""The docstring examples of symgraph.module's modules run and give what they say (the
package-wide doctest test sees only top-level modules)."""
import doctest
import importlib
import pkgutil

import pytest

import symgraph.module

MODULES = ['symgraph.module.' + m.name for m in pkgutil.iter_modules(symgraph.module.__path__)]


@pytest.mark.parametrize('name', MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_examples_exist():
    assert sum(doctest.testmod(importlib.import_module(n)).attempted for n in MODULES) >= 5
