"""The docstring examples of the metric package's modules (tests/test_doctests.py walks the
top level of symgraph only, so it sees ``symgraph.metric`` but not its submodules)."""
import doctest
import importlib

import pytest

MODULES = ['symgraph.metric.base', 'symgraph.metric.classification',
           'symgraph.metric.regression']


@pytest.mark.parametrize('name', MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0, '%d docstring example(s) failed in %s' % (result.failed, name)
