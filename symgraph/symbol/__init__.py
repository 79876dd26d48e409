"""``mx.sym`` / ``mx.symbol``: static graphs built from Variables and operators.

:mod:`.symbol` holds the :class:`Symbol` class and the functions below. Operator
functions (``mx.sym.FullyConnected``, ``mx.sym.contrib.box_nms``) are resolved from the
operator registry on attribute access, so user-registered operators appear as soon as
they are registered; the ``random``, ``contrib``, ``linalg`` and ``_internal`` namespaces
come from the table shared with ``mx.nd`` (``symgraph.namespaces``).
"""
from .. import opdef
from . import symbol
from .symbol import (Symbol, Variable, var, Group, load, load_json, maximum, minimum, pow,
                     power, hypot, zeros, ones, full, arange, eye, linspace, split_v2, histogram,
                     random,
                     contrib, linalg, _internal, image)
from .symbol import __getattr__  # noqa: F401  (operator functions: mx.sym.FullyConnected)
from . import control_flow
from . import sparse
from . import contrib_sampling

for _f in (control_flow.foreach, control_flow.while_loop, control_flow.cond,
           contrib_sampling.rand_zipfian):
    contrib.add_function(_f.__name__, _f)

__all__ = ['Symbol', 'Variable', 'var', 'Group', 'load', 'load_json', 'maximum', 'minimum',
           'pow', 'power', 'hypot', 'zeros', 'ones', 'full', 'arange']


def __dir__():
    return sorted(set(globals()) | set(opdef.list_ops(aliases=True)))
