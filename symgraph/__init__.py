"""symgraph: an MXNet 1.x compatible symbolic graph engine on NumPy and CuPy.

``import symgraph as mx`` and MXNet 1.x symbolic code runs unchanged.
"""
from . import base
from .base import MXNetError, SymgraphError
from . import opdef
from . import name
from .attribute import AttrScope
from . import context
from .context import Context, cpu, gpu, cpu_pinned, current_context
from . import ndarray
from . import ndarray as nd
from . import symbol
from . import symbol as sym
from .executor import Executor
from . import autograd
from . import numpy as np  # noqa: F401  (mx.np: refuses, see its docstring)
from . import random
from . import initializer
from . import initializer as init
from . import lr_scheduler
from . import optimizer
from . import kvstore as kv
from . import model
from . import io
from . import rnn
from . import metric
from . import callback
from . import monitor
from . import monitor as mon

from . import operator
operator.python_op.install_symbol_custom(sym.Custom)   # NumpyOp.get_symbol makes Symbols
from . import visualization
from . import visualization as viz
from . import image
from . import image as img
from . import recordio

from . import dist
from . import module
from . import module as mod
model.FeedForward = module.FeedForward     # mx.model.FeedForward (it is built on Module)
from . import contrib
from . import util
from .util import is_np_shape, set_np_shape, np_shape, use_np_shape, is_np_array, np_array, use_np_array, use_np  # noqa: E501
from . import engine
from . import runtime
from . import profiler
from . import gluon
from . import onnx  # mx.onnx (onnx itself is imported only when an export runs)
from . import ops  # noqa: E402,F401  (registers the operators; must come last)
# the operators' rows in the passes' rule tables (graph/rules.py), one module of them
from .ops import _cpu_rules  # noqa: E402
from .graph.rules import register_rules as _register_rules  # noqa: E402
_register_rules(_cpu_rules.RULES)

__version__ = '0.1.0'

# The CPU backend (oneDNN) loads with the package, as MXNet loads libmxnet and the oneDNN
# inside it at import: the library's ~400 static constructors touch about 12 MiB of its
# code (70 ms), a one-off cost that would otherwise fall into the first training step's
# time and memory. SYMGRAPH_ONEDNN=0 keeps it off; opdef.cpu_backend() stays the way in.
opdef.cpu_backend()


def __getattr__(name):
    # mx.test_utils loads on first use (import mxnet.test_utils works as ever): it brings
    # SciPy's statistics for MXNet's test helpers, seconds that `import symgraph` should
    # not pay
    if name == 'test_utils':
        import importlib
        return importlib.import_module('.test_utils', __name__)
    raise AttributeError("module 'symgraph' has no attribute %r" % name)
