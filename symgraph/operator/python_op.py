"""MXNet 1.x's deprecated Python operator API and operator introspection, after MXNet
1.9.1's ``python/mxnet/operator.py``: :class:`PythonOp`, :class:`NumpyOp` and
:class:`NDArrayOp` (operators written as ``forward``/``backward`` over NumPy arrays or
NDArrays, each instance turned into a Symbol by ``get_symbol``), run here through the
``Custom`` operator (:mod:`.api`); :func:`get_operator_arguments`."""
import collections
import itertools
import warnings

import numpy as np

from .. import opdef
from ..ndarray import array as nd_array
from .api import CustomOp, CustomOpProp, register

__all__ = ['PythonOp', 'NumpyOp', 'NDArrayOp', 'OperatorArguments',
           'get_operator_arguments']

_COUNTER = itertools.count()


class PythonOp:
    """Base class for operators implemented in Python (deprecated in MXNet: use CustomOp).

    Parameters
    ----------
    need_top_grad : bool
        what the default :meth:`need_top_grad` answers.
    """

    def __init__(self, need_top_grad=True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad
        # (a UserWarning, as MXNet's: shown by default)
        warnings.warn('PythonOp has been deprecated. Please use CustomOp', stacklevel=2)

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """The operator applied to the Symbols ``args`` (a Symbol)."""
        raise NotImplementedError('Must override this')

    def forward(self, in_data, out_data):
        """Compute ``out_data`` from ``in_data`` (lists of arrays), in place."""
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        """Compute ``in_grad`` in place."""
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        """``(argument shapes, output shapes)`` from the argument shapes."""
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        return ['output']

    def list_arguments(self):
        return ['data']

    def need_top_grad(self):
        """Whether backward reads the output gradients (False for loss layers)."""
        return self.need_top_grad_


class _PythonOpRun(CustomOp):
    """Runs a :class:`PythonOp`'s forward/backward on NumPy copies (NumpyOp) or on the
    NDArrays themselves (NDArrayOp)."""

    def __init__(self, pyop, on_numpy):
        self._pyop = pyop
        self._numpy = on_numpy

    def _arrays(self, arrays):
        return [a.asnumpy() for a in arrays] if self._numpy else list(arrays)

    def _write_back(self, dsts, reqs, srcs):
        for dst, req, src in zip(dsts, reqs, srcs):
            self.assign(dst, req, nd_array(src, dst.context, dtype=dst.dtype)
                        if self._numpy else src)

    def forward(self, is_train, req, in_data, out_data, aux):
        outs = [np.zeros(o.shape, o.dtype) for o in out_data] if self._numpy \
            else [o.copy() for o in out_data]
        self._pyop.forward(in_data=self._arrays(in_data), out_data=outs)
        self._write_back(out_data, req, outs)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        grads = [np.zeros(g.shape, g.dtype) for g in in_grad] if self._numpy \
            else [g.copy() for g in in_grad]
        self._pyop.backward(out_grad=self._arrays(out_grad), in_data=self._arrays(in_data),
                            out_data=self._arrays(out_data), in_grad=grads)
        self._write_back(in_grad, req, grads)


#: mx.sym.Custom, which the package installs (install_symbol_custom): mx.operator sits
#: below mx.sym and does not import it
_SYMBOL_CUSTOM = []


def install_symbol_custom(fn):
    """Called by the package's ``__init__`` with ``mx.sym.Custom``."""
    _SYMBOL_CUSTOM[:] = [fn]


def _symbol_of(pyop, on_numpy, args, kwargs):
    """Register a Custom operator type for this instance and apply it to ``args``."""
    if not _SYMBOL_CUSTOM:
        raise RuntimeError('get_symbol needs mx.sym: import symgraph (the package) first')
    op_type = '_python_op_%d' % next(_COUNTER)

    class _Prop(CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=pyop.need_top_grad())

        def list_arguments(self):
            return pyop.list_arguments()

        def list_outputs(self):
            return pyop.list_outputs()

        def infer_shape(self, in_shape):
            ishape, oshape = pyop.infer_shape([list(s) for s in in_shape])
            return ishape, oshape, []

        def create_operator(self, ctx, shapes, dtypes):
            return _PythonOpRun(pyop, on_numpy)
    register(op_type)(_Prop)
    return _SYMBOL_CUSTOM[0](*args, op_type=op_type, **kwargs)


class NumpyOp(PythonOp):
    """A :class:`PythonOp` whose ``forward``/``backward`` take NumPy arrays (deprecated in
    MXNet: use CustomOp)."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)

    def get_symbol(self, *args, **kwargs):
        return _symbol_of(self, True, args, kwargs)


class NDArrayOp(PythonOp):
    """A :class:`PythonOp` whose ``forward``/``backward`` take NDArrays (deprecated in
    MXNet: use CustomOp)."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)

    def get_symbol(self, *args, **kwargs):
        return _symbol_of(self, False, args, kwargs)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Every array backward may read (MXNet's default)."""
        deps = list(in_data) + list(out_data)
        return deps + list(out_grad) if self.need_top_grad() else deps


OperatorArguments = collections.namedtuple('OperatorArguments', ['narg', 'names', 'types'])

_KIND_NAMES = {bool: 'boolean', int: 'int', float: 'float', str: 'string',
               'shape': 'Shape(tuple)', 'axis': 'Shape or None', 'floats': 'tuple of <float>'}


def _default_text(value):
    if isinstance(value, bool):
        return str(int(value))
    if value is None:
        return 'None'
    if isinstance(value, (tuple, list)):
        return '[%s]' % ','.join(str(v) for v in value)
    if isinstance(value, str):
        return "'%s'" % value
    return str(value)


def _type_text(p):
    """A parameter's type as MXNet's registry describes it."""
    if p.choices is not None or p.kind == 'dtype':
        choices = sorted(str(c) for c in (p.choices or ()))
        text = '{%s}' % ', '.join((['None'] if p.nullable else [])
                                  + ["'%s'" % c for c in choices if c != 'None'])
        if p.default is opdef.REQUIRED:
            return text + ', required'
        # (MXNet writes no space before 'optional' after a set of choices)
        return text + ",optional, default='%s'" % (p.default,)
    text = _KIND_NAMES.get(p.kind, str(p.kind))
    if p.nullable and p.kind in (bool, int, float):
        text += ' or None'
    if p.default is opdef.REQUIRED:
        return text + ', required'
    if p.kind == 'shape' and p.default is None:
        return text + ', optional, default=[]'
    return text + ', optional, default=%s' % _default_text(p.default)


def _inputs(cls):
    """The input names of operator class ``cls`` and whether it takes a list of them."""
    op = cls.__new__(cls)
    values = {k: (None if p.default is opdef.REQUIRED else p.default)
              for k, p in cls._params.items()}
    object.__setattr__(op, '_values', values)
    for k, v in values.items():
        object.__setattr__(op, k, v)
    if 'num_args' in cls._params:
        return ['data'], True
    try:
        return list(op.list_arguments()) + list(op.list_auxiliary_states()), False
    except Exception:       # an operator whose inputs follow a required parameter
        return ['data'], False


def get_operator_arguments(op_name):
    """The arguments of operator ``op_name``: ``OperatorArguments(narg, names, types)``,
    inputs first (type ``'NDArray-or-Symbol'``, ``'NDArray-or-Symbol[]'`` for a list),
    then the parameters with their types as MXNet describes them.

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.operator.get_operator_arguments('Activation').names
    ['data', 'act_type']
    """
    cls = opdef.get_op(op_name)
    inputs, variadic = _inputs(cls)
    names = inputs + list(cls._params)
    types = ['NDArray-or-Symbol[]' if variadic else 'NDArray-or-Symbol'] * len(inputs)
    types += [_type_text(p) for p in cls._params.values()]
    return OperatorArguments(len(names), names, types)
