"""``import mxnet`` gives symgraph: an alias package for running MXNet's own tests.

Put the folder holding this package first on ``sys.path`` (the harness,
``scripts/run_mxnet_unittests.py``, does) and MXNet-era code imports symgraph under MXNet's
name. ``sys.modules['mxnet']`` becomes the ``symgraph`` module itself, and a finder placed
first on ``sys.meta_path`` answers every ``mxnet.<sub>`` import with the very module object
of ``symgraph.<sub>``: without it Python would find ``symgraph/<sub>.py`` through the
package's ``__path__`` and load a second copy under the ``mxnet.`` name, with its own
registries and classes (``isinstance(x, mxnet.ndarray.NDArray)`` would then fail for
arrays made by ``symgraph``). Names that symgraph keeps as attributes rather than modules
(``mx.nd.random``, ``mx.sym.contrib``) are imported as those attributes.
"""
import importlib
import importlib.abc
import importlib.util
import sys
import types

import symgraph

_PREFIX = 'mxnet.'


def _target(fullname):
    """The symgraph module (or module-like attribute) that ``mxnet.<sub>`` stands for."""
    real = 'symgraph.' + fullname[len(_PREFIX):]
    try:
        return importlib.import_module(real)
    except ModuleNotFoundError as err:
        if err.name is None or not real.startswith(err.name):
            raise            # a module that symgraph.<sub> itself imports is missing
    # not a module file: an attribute of the parent (mx.nd.random, mx.sym.contrib, ...)
    parent, _, leaf = fullname.rpartition('.')
    obj = getattr(_target(parent) if parent != 'mxnet' else symgraph, leaf, None)
    if isinstance(obj, types.ModuleType) or (obj is not None and hasattr(obj, '__dict__')
                                             and not callable(obj)):
        return obj
    raise ModuleNotFoundError("No module named %r (symgraph has no %r)" % (fullname, real),
                              name=fullname)


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``mxnet.<sub>`` as ``symgraph.<sub>``, the same module object."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_PREFIX):
            return None
        module = _target(fullname)
        spec = importlib.util.spec_from_loader(fullname, self)
        spec._alias_module = module
        return spec

    def create_module(self, spec):
        return spec._alias_module

    def exec_module(self, module):
        """The symgraph module ran when it was imported: nothing left to do."""


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())
sys.modules[__name__] = symgraph
