"""``mx.nd`` / ``mx.ndarray``: arrays on a device and the imperative operator calls.

:mod:`.ndarray` holds the :class:`NDArray` class and the functions below;
:mod:`.serialization` reads and writes MXNet's ``.params`` format (``save``, ``load``).
Operator functions (``mx.nd.exp``, ``mx.nd.contrib.box_nms``, ``mx.nd.Custom``) run the
registered operator's forward imperatively; the ``random``, ``contrib``, ``linalg`` and
``_internal`` namespaces come from the table shared with ``mx.sym``
(``symgraph.namespaces``).
"""
from . import ndarray
from .ndarray import (NDArray, array, zeros, ones, empty, full, arange, eye, linspace,
                      zeros_like, ones_like, concat, concatenate, waitall, moveaxis, from_numpy,
                      save, load, load_frombuffer, invoke,
                      add, subtract, multiply, divide, true_divide, modulo, power, maximum,
                      minimum, hypot, equal, not_equal, greater, greater_equal, lesser,
                      lesser_equal, logical_and, logical_or, logical_xor, split_v2, histogram,
                      onehot_encode,
                      random, contrib, linalg, _internal, image)
from .ndarray import __getattr__  # noqa: F401  (operator functions: mx.nd.exp)
from . import control_flow
from . import sparse
from . import dlpack
from .dlpack import from_dlpack, to_dlpack_for_read, to_dlpack_for_write
from .cached_op import CachedOp

from . import contrib_math
for _f in (control_flow.foreach, control_flow.while_loop, control_flow.cond,
           contrib_math.isinf, contrib_math.isfinite, contrib_math.isnan,
           contrib_math.rand_zipfian):
    contrib.add_function(_f.__name__, _f)

__all__ = ['NDArray', 'array', 'zeros', 'ones', 'empty', 'full', 'arange', 'eye', 'linspace',
           'save', 'load', 'load_frombuffer',
           'concat', 'waitall', 'zeros_like', 'ones_like']

