"""The ``Custom`` operator: user ``CustomOpProp``/``CustomOp`` classes adapted to opdef.

One :class:`Custom` node holds an instance of the user's prop, built from the node's
``op_type`` and the remaining parameters as strings (MXNet passes every kwarg as ``str``).
Structure and shape/type inference delegate to the prop; forward and backward create the
user's ``CustomOp`` once per executor and (context, shapes, dtypes) through ``create_operator``
(as MXNet makes one per bind; the executor keeps it in the operator's per-bind state) and hand
it NDArrays, MXNet style: outputs and input gradients are preallocated (zeroed, so nothing
uninitialised can leak) and filled by the user through ``assign``.

What ``declare_backward_dependency`` leaves out is not saved for backward (the planner
frees it) and reaches ``backward`` as a :class:`NotAvailable` object that raises a clear
error on any use.
"""
from __future__ import annotations

import numpy as np

from .. import opdef
from ..base import (MXNetError, ShapeError, TypeInferenceError, ArgumentError, ParameterError,
                    UsageError)
from ..context import cpu, gpu, context_of
from ..graph import TYPE_CODE
from ..ndarray import NDArray
from ..profiler import _recorder as _prof
from .api import (CustomOp, CustomOpError, NotAvailable, UnassignedResultError, lookup_prop,
                  registered_props)

__all__ = ['Custom']

class _PropFailure(RuntimeError):
    """The prop's own ``infer_shape``/``infer_type`` raised.

    Deliberately not an MXNetError: shape inference retries rules that fail on partially
    known inputs (MXNet-style props index ``in_shape[0][1]`` freely) and reports the
    failure, chained to the original, once all inputs are known.
    """


# ----------------------------------------------------------------------------------
# arrays handed to user code
# ----------------------------------------------------------------------------------
class _ReadOnly(NDArray):
    """An input of a custom op (in_data, out_data and out_grad in backward): read-only,
    as in MXNet, because writing into it would corrupt the graph's arrays."""

    __slots__ = ()

    def _refuse(self, *args):
        raise ArgumentError('this NDArray is an input of a custom operator and is read-only; '
                            'write to out_data/in_grad (e.g. with self.assign) instead')

    __setitem__ = __iadd__ = __isub__ = __imul__ = __itruediv__ = _refuse


class CustomOpTypeError(CustomOpError, TypeError):
    """``create_operator`` returned something that is not a CustomOp, or user code of a
    custom op raised a TypeError."""


class CustomOpValueError(CustomOpError, ValueError):
    """User code of a custom op raised a ValueError (e.g. it assigned a wrong shape)."""


class _Result(NDArray):
    """An out_data (forward) or in_grad (backward) array of a custom op: notes whether
    user code wrote into it (assign, ``[:] =``, in-place arithmetic, ``out=``, copyto), so
    that a result never written is an error rather than silent zeros, at no copy."""

    __slots__ = ('_written',)

    def __init__(self, data, ctx):
        super().__init__(data, ctx)
        self._written = False

    def _wrote(self):
        self._written = True


def _check_written(op, what, arrays, names, reqs):
    for a, name, req in zip(arrays, names, reqs):
        if req in ('write', 'inplace', 'add') and not a._written:
            raise UnassignedResultError(
                'custom operator %r: %s.%s never assigned %s (req=%r); write it with '
                'self.assign(...) or [:] =' % (op.op_type, type(op.prop).__name__, what,
                                               name, req))


# ----------------------------------------------------------------------------------
# shape/type conventions between symgraph and MXNet's prop API
# ----------------------------------------------------------------------------------
def _shape_to_mx(s):
    """Ours (None unknown, 0 unknown dim) -> MXNet's list of ints (``[]`` unknown)."""
    return [] if s is None else [int(d) for d in s]


def _shape_from_mx(s, what):
    """A shape returned by a prop -> ours. ``()``/``[]`` means unknown, as in MXNet."""
    if s is None:
        return None
    if isinstance(s, np.ndarray):
        s = s.tolist()
    if not isinstance(s, (tuple, list)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in s):
        raise ShapeError('%s must be a tuple or list of ints, got %r' % (what, s))
    if len(s) == 0 or any(int(d) < 0 for d in s):
        return None          # [] or a -1 dimension: unknown, as in MXNet
    return tuple(int(d) for d in s)


def _type_from_mx(t, what):
    if t is None or (isinstance(t, (int, np.integer)) and t == -1):
        return None
    try:
        return np.dtype(t)
    except TypeError:
        raise TypeInferenceError('%s must be a NumPy type, got %r' % (what, t)) from None


def _split_result(op, ret, what, kind):
    """(in, out, aux) lists from a prop's 2- or 3-list result, with checked lengths."""
    if not isinstance(ret, (tuple, list)) or len(ret) not in (2, 3):
        raise kind('custom operator %r: %s must return 2 or 3 lists (arguments, outputs'
                   '[, auxiliary states]), got %r' % (op.op_type, what, ret))
    ins, outs = ret[0], ret[1]
    aux = ret[2] if len(ret) == 3 else []
    for got, names, label in ((ins, op._args, 'argument'), (outs, op._outs, 'output'),
                              (aux, op._aux, 'auxiliary state')):
        if not isinstance(got, (tuple, list)) or len(got) != len(names):
            raise kind('custom operator %r: %s returned %s %ss but the prop lists %d: %s'
                       % (op.op_type, what, len(got) if isinstance(got, (tuple, list))
                          else repr(got), label, len(names), names))
    return list(ins), list(outs), list(aux)


def _call_prop(op, method, arg):
    """Ask the prop; its answer is kept by question, for the operator made from it.

    The inference pass asks each node once per inference (as MXNet does); the answer is
    remembered so that creating the user's operator at the first forward reuses what the
    bind's inference saw instead of asking again (MXNet asks once per bind).
    """
    key = (method, tuple(tuple(a) if isinstance(a, list) else a for a in arg))
    try:
        ret = getattr(op.prop, method)(arg)
    except MXNetError:
        raise
    except Exception as e:
        raise _PropFailure('custom operator %r: %s.%s raised %s: %s'
                           % (op.op_type, type(op.prop).__name__, method, type(e).__name__,
                              e)) from e
    if key in op._memo or len(op._memo) < 256:
        op._memo[key] = ret
    return ret


def _asked(op, method, arg):
    """The prop's answer to a question inference already asked (asked now otherwise)."""
    key = (method, tuple(tuple(a) if isinstance(a, list) else a for a in arg))
    if key in op._memo:
        return op._memo[key]
    return _call_prop(op, method, arg)


def _ctx_of(xp, arrays):
    for a in arrays:
        if a is not None:
            return context_of(a)
    if xp is np:
        return cpu()
    return gpu(xp.cuda.Device().id)


class _State:
    """A user CustomOp created for one (context, input shapes, input dtypes)."""

    __slots__ = ('op', 'in_shapes', 'in_dtypes', 'out_shapes', 'out_dtypes')

    def __init__(self, op, in_shapes, in_dtypes, out_shapes, out_dtypes):
        self.op = op
        self.in_shapes = in_shapes
        self.in_dtypes = in_dtypes
        self.out_shapes = out_shapes
        self.out_dtypes = out_dtypes


# ----------------------------------------------------------------------------------
# the operator
# ----------------------------------------------------------------------------------
@opdef.register
class Custom(opdef.Operator):
    """Apply a custom operator implemented in Python (``CustomOpProp``/``CustomOp``).

    Parameters
    ----------
    op_type : str
        the name given to ``mx.operator.register``.
    **kwargs
        passed to the prop's ``__init__`` as strings, as MXNet does.
    """

    name = 'Custom'
    free_params = True
    wants_req = True

    def __init__(self, op_type=None, **kwargs):
        if op_type is None:
            raise ParameterError('operator Custom: required parameter \'op_type\' is missing '
                                 '(registered custom operators: %s)'
                                 % (registered_props() or 'none'))
        op_type = str(op_type)
        prop_cls = lookup_prop(op_type)
        params = {k: opdef.format_value(v) for k, v in kwargs.items()}
        try:
            prop = prop_cls(**params)
        except MXNetError:
            raise
        except Exception as e:
            raise CustomOpError('custom operator %r: %s(**%r) raised %s: %s'
                                % (op_type, prop_cls.__name__, params, type(e).__name__,
                                   e)) from e
        values = dict(params, op_type=op_type)
        put = object.__setattr__
        put(self, '_values', values)
        put(self, 'op_type', op_type)
        put(self, 'prop', prop)

        def names(method):
            got = _call_user(self, method, getattr(prop, method))
            if not isinstance(got, (list, tuple)) or not all(isinstance(a, str) for a in got):
                raise CustomOpError('custom operator %r: %s.%s must return a list of '
                                    'strings, got %r' % (op_type, type(prop).__name__,
                                                         method, got))
            return list(got)
        put(self, '_args', names('list_arguments'))
        put(self, '_outs', names('list_outputs'))
        put(self, '_aux', names('list_auxiliary_states'))
        put(self, '_memo', {})
        n_in, n_out = len(self._args), len(self._outs)
        # MXNet's numbering of backward dependencies: out_grad, in_data, out_data
        og_ids = list(range(n_out))
        in_ids = list(range(n_out, n_out + n_in))
        out_ids = list(range(n_out + n_in, 2 * n_out + n_in))
        deps = _call_user(self, 'declare_backward_dependency',
                          prop.declare_backward_dependency, og_ids, in_ids, out_ids)
        if not isinstance(deps, (list, tuple)):
            raise CustomOpError('custom operator %r: %s.declare_backward_dependency must '
                                'return a list of ids, got %r'
                                % (op_type, type(prop).__name__, deps))
        deps = set(int(d) for d in deps)
        put(self, '_dep_og', tuple(i for i in range(n_out) if og_ids[i] in deps))
        put(self, 'needs_inputs', tuple(i for i in range(n_in) if in_ids[i] in deps))
        put(self, 'needs_outputs', tuple(i for i in range(n_out) if out_ids[i] in deps))

    @property
    def is_loss(self):
        """``need_top_grad=False``: backward gets no output gradient (a loss head)."""
        return not getattr(self.prop, 'need_top_grad_', True)

    def __hash__(self):
        return hash((type(self), tuple(sorted(self._values.items()))))

    def __repr__(self):
        return 'Custom(%s)' % ', '.join('%s=%r' % kv for kv in sorted(self._values.items()))

    # --- structure ---------------------------------------------------------------
    def list_arguments(self):
        return list(self._args)

    def list_outputs(self):
        return list(self._outs)

    def list_auxiliary_states(self):
        return list(self._aux)

    # --- inference: only the prop is consulted, no data flows --------------------
    def infer_shape(self, in_shapes):
        return self._infer_shape(in_shapes, _call_prop)

    def infer_type(self, in_types):
        return self._infer_type(in_types, _call_prop)

    def _infer_shape(self, in_shapes, ask):
        n = len(self._args)
        ret = ask(self, 'infer_shape', [_shape_to_mx(s) for s in in_shapes[:n]])
        ins, outs, aux = _split_result(self, ret, 'infer_shape', ShapeError)
        return ([_shape_from_mx(s, 'infer_shape of custom operator %r: shape of argument %r'
                                % (self.op_type, a)) for s, a in zip(ins, self._args)],
                [_shape_from_mx(s, 'infer_shape of custom operator %r: shape of output %r'
                                % (self.op_type, a)) for s, a in zip(outs, self._outs)],
                [_shape_from_mx(s, 'infer_shape of custom operator %r: shape of auxiliary '
                                'state %r' % (self.op_type, a)) for s, a in zip(aux, self._aux)])

    def _infer_type(self, in_types, ask):
        n = len(self._args)
        types = [None if t is None else np.dtype(t).type for t in in_types[:n]]
        ret = ask(self, 'infer_type', types)
        ins, outs, aux = _split_result(self, ret, 'infer_type', TypeInferenceError)
        what = 'infer_type of custom operator %r: type of %s' % (self.op_type, '%s')
        return ([_type_from_mx(t, what % a) for t, a in zip(ins, self._args)],
                [_type_from_mx(t, what % a) for t, a in zip(outs, self._outs)],
                [_type_from_mx(t, what % a) for t, a in zip(aux, self._aux)])

    # --- compute -----------------------------------------------------------------
    def bind(self, ctx, in_shapes, in_dtypes):
        """A Step whose state is, per bind, the user's CustomOp instances (one per
        context, shapes and dtypes, made by ``create_operator``: the bind's one right away,
        as MXNet's bind does) and the key of the latest forward, which backward continues."""
        state = {'ops': {}, 'last': None}
        self._state(state, ctx, tuple(tuple(s) for s in in_shapes),
                    tuple(np.dtype(t) for t in in_dtypes))
        state['last'] = None
        return opdef.Step(self, ctx, state)

    def _state(self, bind_state, ctx, shapes, dtypes):
        """The user op and output shapes for these inputs (created on first use)."""
        key = (ctx, shapes, dtypes)
        st = bind_state['ops'].get(key)
        if st is None:
            n = len(self._args)
            # what the bind's inference asked the prop (MXNet asks once per bind, right
            # before create_operator: a prop may keep what infer_shape saw and use it there)
            sh_in, sh_out, _ = self._infer_shape(list(shapes), _asked)
            ty_in, ty_out, _ = self._infer_type(list(dtypes), _asked)
            for name, s in zip(self._outs, sh_out):
                if not opdef.shape_known(s):
                    raise ShapeError('custom operator %r: infer_shape gives output %r the '
                                     'shape %s for inputs %s' % (self.op_type, name, s,
                                                                 list(shapes[:n])))
            out_types = [np.dtype(np.float32) if t is None else t for t in ty_out]
            with ctx:
                user_op = _call_user(self, 'create_operator', self.prop.create_operator, ctx,
                                     [list(s) for s in shapes],
                                     [TYPE_CODE.get(t.name, -1) for t in dtypes])
            if not isinstance(user_op, CustomOp):
                raise CustomOpTypeError('custom operator %r: %s.create_operator returned %r, '
                                    'not a CustomOp' % (self.op_type, type(self.prop).__name__,
                                                        user_op))
            st = _State(user_op, shapes, dtypes, [tuple(s) for s in sh_out], out_types)
            bind_state['ops'][key] = st
        bind_state['last'] = key
        return st

    def forward(self, xp, inputs, aux, is_train, state=None):
        arrays = list(inputs) + list(aux)
        ctx = _ctx_of(xp, arrays)
        if state is None:
            state = {'ops': {}, 'last': None}
        st = self._state(state, ctx, tuple(tuple(a.shape) for a in arrays),
                         tuple(np.dtype(a.dtype) for a in arrays))
        in_data = [_ReadOnly(a, ctx) for a in inputs]
        out_data = [_Result(xp.zeros(s, dtype=t), ctx)
                    for s, t in zip(st.out_shapes, st.out_dtypes)]
        aux_nd = [NDArray(a, ctx) for a in aux]
        with ctx:
            _call_user(self, 'forward', st.op.forward, is_train=int(bool(is_train)),
                       req=['write'] * len(out_data), in_data=in_data, out_data=out_data,
                       aux=aux_nd)
        _check_written(self, 'forward', out_data,
                       ['output %r (out_data[%d])' % (n, i) for i, n in enumerate(self._outs)],
                       ['write'] * len(out_data))
        return [o._data for o in out_data]

    def backward(self, xp, out_grads, inputs, outputs, aux, need, state=None, req=None):
        if state is None or state['last'] is None:
            raise UsageError('custom operator %r: backward without a forward in this '
                             'executor' % self.op_type)
        ctx = _ctx_of(xp, list(out_grads) + list(inputs) + list(outputs) + list(aux))
        st = state['ops'][state['last']]
        who = 'custom operator %r' % self.op_type

        def avail(arrs, kind, names):
            res = []
            for a, nm in zip(arrs, names):
                if a is not None:
                    res.append(_ReadOnly(a, ctx))
                elif kind == 'out_grad' and self.is_loss:
                    res.append(NotAvailable(
                        '%s was created with need_top_grad=False, so its backward receives '
                        'no output gradient (out_grad for %r)' % (who, nm)))
                else:
                    res.append(NotAvailable(
                        '%s: %s %r is not available in backward because '
                        'declare_backward_dependency does not list it' % (who, kind, nm)))
            return res
        og = [g if i in self._dep_og else None for i, g in enumerate(out_grads)]
        n = len(self._args)
        in_grad = [_Result(xp.zeros(s, dtype=t), ctx)
                   for s, t in zip(st.in_shapes[:n], st.in_dtypes[:n])]
        with ctx:
            if req is None:
                req = ['write' if nd else 'null' for nd in need]
            _call_user(self, 'backward', st.op.backward, req=list(req),
                       out_grad=avail(og, 'out_grad', self._outs),
                       in_data=avail(inputs, 'in_data', self._args),
                       out_data=avail(outputs, 'out_data', self._outs),
                       in_grad=in_grad, aux=[NDArray(a, ctx) for a in aux])
        _check_written(self, 'backward', in_grad,
                       ['the gradient of input %r (in_grad[%d])' % (n, i)
                        for i, n in enumerate(self._args)], req)
        return [g._data if nd else None for g, nd in zip(in_grad, need)]


def _call_user(op, what, fn, *args, **kwargs):
    """Run user code; a failure becomes a CustomOpError naming the op (original chained).

    While mx.profiler runs, the call is an event of category ``Custom Operator`` named as
    MXNet names it (``MyOp::pure_python``, ``_backward_MyOp::pure_python``), and the
    ``mx.nd`` calls it makes are named ``MyOp::<operator>``."""
    if (_prof.symbolic or _prof.imperative) and what in ('forward', 'backward'):
        prefix = ('' if what == 'forward' else '_backward_') + op.op_type + '::'
        _prof.push_scope(prefix, 'Custom Operator')
        t0 = _prof.now()
        try:
            return _call_user_code(op, what, fn, *args, **kwargs)
        finally:
            _prof.record(prefix + 'pure_python', 'Custom Operator', t0, _prof.now())
            _prof.pop_scope()
    return _call_user_code(op, what, fn, *args, **kwargs)


def _call_user_code(op, what, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        cls = (CustomOpValueError if isinstance(e, ValueError) else
               CustomOpTypeError if isinstance(e, TypeError) else CustomOpError)
        raise cls('custom operator %r (%s.%s) raised %s: %s'
                            % (op.op_type, type(getattr(fn, '__self__', op.prop)).__name__,
                               what, type(e).__name__, e)) from e

