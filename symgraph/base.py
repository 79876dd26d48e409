"""Errors and small shared utilities (MXNet's ``mxnet.base``)."""
from __future__ import annotations

import os
import sys

__all__ = ['SymgraphError', 'MXNetError', 'ShapeError', 'TypeInferenceError',
           'BindError', 'user_location', 'string_types', 'numeric_types']

string_types = (str,)
numeric_types = (float, int)


class SymgraphError(Exception):
    """Base error of symgraph; also exported as ``MXNetError``."""


MXNetError = SymgraphError


class ShapeError(SymgraphError, ValueError):
    """Shapes that do not fit an operator (raised by shape inference and binding)."""


class TypeInferenceError(SymgraphError, TypeError):
    """Data types that do not fit an operator."""


class BindError(SymgraphError, ValueError):
    """Arrays given to ``bind`` that do not fit the symbol."""


_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_PKG_ROOT = os.path.dirname(_PKG_DIR)
_INTERNAL_DIRS = None


def _internal_dirs():
    global _INTERNAL_DIRS
    if _INTERNAL_DIRS is None:
        import importlib.util
        dirs = [_PKG_DIR]
        for sub in ('symgraph.ops', 'symgraph.cuda'):   # located, not imported
            spec = importlib.util.find_spec(sub)
            if spec is not None and spec.submodule_search_locations:
                dirs.extend(spec.submodule_search_locations)
        _INTERNAL_DIRS = tuple(os.path.abspath(d) for d in dirs)
    return _INTERNAL_DIRS


_IS_INTERNAL = {}


def _internal(filename):
    """Whether code in ``filename`` belongs to symgraph (cached; paths normalised)."""
    r = _IS_INTERNAL.get(filename)
    if r is None:
        real = os.path.realpath(filename)
        r = filename.startswith('<frozen') or any(
            real.startswith(os.path.realpath(d) + os.sep) for d in _internal_dirs())
        _IS_INTERNAL[filename] = r
    return r


def user_location():
    """``'file:line'`` of the first frame outside symgraph: where the user made a node."""
    f = sys._getframe(1)
    while f is not None:
        if not _internal(f.f_code.co_filename):
            return '%s:%d' % (f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return '<unknown>'
