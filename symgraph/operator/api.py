"""Operators written in Python, with MXNet's API (``mx.operator``).

Subclass :class:`CustomOpProp` (structure, shapes, types, backward dependencies) and
:class:`CustomOp` (forward and backward on NDArrays), register the prop under a name and
use it with ``mx.sym.Custom(..., op_type=name)`` or ``mx.nd.Custom``:

>>> import numpy as np
>>> import symgraph as mx
>>> class Twice(mx.operator.CustomOp):
...     def forward(self, is_train, req, in_data, out_data, aux):
...         self.assign(out_data[0], req[0], in_data[0] * 2)
...     def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
...         self.assign(in_grad[0], req[0], out_grad[0] * 2)
>>> @mx.operator.register('doc_twice')
... class TwiceProp(mx.operator.CustomOpProp):
...     def create_operator(self, ctx, in_shapes, in_dtypes):
...         return Twice()
>>> y = mx.sym.Custom(mx.sym.var('x'), op_type='doc_twice', name='t')
>>> y.list_outputs()
['t_output']
>>> mx.nd.Custom(mx.nd.array([1, 2]), op_type='doc_twice').asnumpy()
array([2., 4.], dtype=float32)

Differences from MXNet: :meth:`CustomOp.assign` also accepts NumPy arrays and scalars for
``req='add'``; arrays a backward did not declare raise a clear error when used instead of
holding undefined data; a forward that never writes an output, or a backward that never
writes an input gradient it was asked for (req write/add), raises
:class:`UnassignedResultError` instead of handing back undefined data.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import opdef
from ..base import MXNetError, ArgumentError, ArgumentTypeError, UnknownNameError, UsageError
from ..ndarray import NDArray
from ..ndarray.ndarray import _to_xp
from ..context import array_module

__all__ = ['CustomOp', 'CustomOpProp', 'register', 'get_all_registered_operators',
           'CustomOpError', 'UnassignedResultError', 'NotAvailable', 'lookup_prop',
           'registered_props']

#: op_type -> CustomOpProp subclass (filled by ``symgraph.operator.register``)
_PROPS = {}


def registered_props():
    """Names of the registered custom operator types, sorted."""
    return sorted(_PROPS)


def lookup_prop(op_type):
    """The prop class registered as ``op_type``; the error lists the registered ones."""
    try:
        return _PROPS[op_type]
    except KeyError:
        raise UnknownNameError('Cannot find custom operator %r: register a CustomOpProp subclass '
                               'with @mx.operator.register(%r) first (registered custom operators: '
                               '%s)' % (op_type, op_type, registered_props() or 'none')) from None


class CustomOpError(MXNetError):
    """An exception raised by user code of a custom operator, re-raised with its name.

    The original exception is chained (``__cause__``), so its traceback is kept.
    """


class UnassignedResultError(CustomOpError, RuntimeError):
    """A custom op's forward left an output unwritten, or its backward an input gradient
    it was asked for (req write or add): symgraph refuses the silent zeros."""


class NotAvailable:
    """Stands for an array a custom op's backward may not use (see module docstring)."""

    __slots__ = ('_why',)

    def __init__(self, why):
        object.__setattr__(self, '_why', why)

    def _fail(self, *args, **kwargs):
        raise UsageError(self._why)

    def __getattr__(self, name):
        if name.startswith('__') and name.endswith('__'):
            raise AttributeError(name)
        raise UsageError(self._why)

    def __repr__(self):
        return '<not available: %s>' % self._why

    __setattr__ = __getitem__ = __setitem__ = __len__ = __iter__ = __bool__ = _fail
    __array__ = __float__ = __int__ = __index__ = __neg__ = __abs__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __mod__ = __matmul__ = _fail
    __iadd__ = __isub__ = __imul__ = __itruediv__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = _fail
    __hash__ = None


def as_array_of(dst, src):
    """``src`` (NDArray, NumPy/CuPy array, list or scalar) as something ``dst._data`` can
    take, on ``dst``'s device."""
    if isinstance(src, NotAvailable):
        src._fail()
    if isinstance(src, NDArray):
        return _to_xp(src._data, dst._ctx)
    if isinstance(src, (int, float, bool, np.number)):
        return src
    if isinstance(src, (list, tuple)):
        src = np.asarray(src)
    return _to_xp(src, dst._ctx)




class CustomOp:
    """Base class of the computation of a custom operator.

    ``forward`` and ``backward`` receive lists of :class:`~symgraph.ndarray.NDArray`
    (holding NumPy arrays on the CPU, CuPy arrays on a GPU) and write their results into
    ``out_data`` / ``in_grad``, preferably with :meth:`assign`.
    """

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute ``out_data`` from ``in_data``.

        Parameters
        ----------
        is_train : int
            1 in a training forward, 0 otherwise (an int, as in MXNet).
        req : list of str
            how to write each output: 'null', 'write', 'inplace' or 'add'.
        in_data, out_data, aux : list of NDArray
            inputs (read-only), outputs, auxiliary states (writable).
        """

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute ``in_grad`` from ``out_grad``.

        Parameters
        ----------
        req : list of str
            per argument: 'write', 'add' (the argument was bound with ``grad_req='add'``
            and feeds this operator directly) or 'null' (gradient not needed).
        out_grad, in_data, out_data, in_grad, aux : list of NDArray
            entries left out by ``declare_backward_dependency`` raise an error when used.
        """

    def assign(self, dst, req, src):
        """Write ``src`` into ``dst`` as ``req`` says.

        Parameters
        ----------
        dst : NDArray
        req : {'null', 'write', 'inplace', 'add'}
        src : NDArray, NumPy/CuPy array, list or scalar (broadcast to ``dst``)
        """
        if req == 'null':
            return
        if isinstance(dst, NotAvailable):
            dst._fail()
        if not isinstance(dst, NDArray):
            raise ArgumentTypeError('assign: dst must be an NDArray, got %s' % type(dst).__name__)
        dst._wrote()
        if req in ('write', 'inplace'):
            dst[:] = src
        elif req == 'add':
            data = dst._data
            xp = array_module(data)
            xp.add(data, as_array_of(dst, src), out=data, casting='unsafe')
        else:
            raise ArgumentError("assign: req must be 'null', 'write', 'inplace' or 'add', "
                                "got %r" % (req,))


class CustomOpProp:
    """Base class of the description of a custom operator (MXNet's ``CustomOpProp``).

    Parameters
    ----------
    need_top_grad : bool
        False makes the operator a loss head: its backward receives no output gradient and
        ``Executor.backward()`` needs no head gradient for it.
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """Shapes from the argument shapes (lists of ints; ``[]`` when unknown).

        Returns
        -------
        (in_shapes, out_shapes) or (in_shapes, out_shapes, aux_shapes)
        """
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """Types from the argument types (NumPy type objects, None when unknown)."""
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype):
        """Only dense ('default') storage exists in symgraph."""
        n_out, n_aux = len(self.list_outputs()), len(self.list_auxiliary_states())
        return in_stype, ['default'] * n_out, ['default'] * n_aux

    def list_outputs(self):
        """Names of the outputs (``<node>_<name>`` for users)."""
        return ['output']

    def list_arguments(self):
        """Names of the arguments (omitted ones become Variables ``<node>_<name>``)."""
        return ['data']

    def list_auxiliary_states(self):
        """Names of the auxiliary states."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids (from the three lists) of the arrays backward uses.

        What is left out is freed after forward and unavailable in backward.
        """
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The :class:`CustomOp` for this context, input shapes (lists of ints, arguments
        then auxiliary states) and input dtypes (MXNet type codes: 0 is float32)."""
        return CustomOp()


def register(reg_name):
    """Class decorator registering a :class:`CustomOpProp` subclass as ``reg_name``.

    Registering a name again replaces the earlier class, with a warning.
    """
    reg_name = str(reg_name)

    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise ArgumentTypeError('mx.operator.register(%r) decorates CustomOpProp subclasses, '
                                    'not %r' % (reg_name, prop_cls))
        old = _PROPS.get(reg_name)
        if old is not None and old is not prop_cls:
            warnings.warn('custom operator %r is registered again: %s.%s replaces %s.%s'
                          % (reg_name, prop_cls.__module__, prop_cls.__qualname__,
                             old.__module__, old.__qualname__), stacklevel=2)
        _PROPS[reg_name] = prop_cls
        return prop_cls
    return do_register


register('custom_op')(CustomOpProp)


def get_all_registered_operators():
    """Names of every operator: the built-in ones (aliases included, as MXNet lists them)
    followed by the registered custom operator types (which MXNet does not list)."""
    return opdef.list_ops(aliases=True) + sorted(n for n in _PROPS
                                                 if n not in opdef.list_ops(aliases=True))
