"""``mx.operator``: operators written in Python, with MXNet's ``CustomOp`` API.

:mod:`.api` is what users subclass and register (it owns the registry of custom operator
types); :mod:`.custom` adapts a registered prop into the operator protocol of
:mod:`symgraph.opdef` as the ``Custom`` operator. The adapter imports the API, never the
reverse.
"""
from .api import (CustomOp, CustomOpProp, CustomOpError, UnassignedResultError, NotAvailable,
                  register, get_all_registered_operators)
from . import custom  # noqa: F401  (registers the Custom operator)
from .python_op import (PythonOp, NumpyOp, NDArrayOp, OperatorArguments,
                        get_operator_arguments)

__all__ = ['CustomOp', 'CustomOpProp', 'register', 'get_all_registered_operators',
           'CustomOpError', 'UnassignedResultError', 'PythonOp', 'NumpyOp', 'NDArrayOp',
           'OperatorArguments', 'get_operator_arguments']
