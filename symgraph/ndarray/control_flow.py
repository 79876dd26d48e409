"""``mx.nd.contrib.foreach``, ``while_loop`` and ``cond``: plain Python loops over
NDArrays, as MXNet 1.9.1's python/mxnet/ndarray/contrib.py runs them (the symbolic
versions build ``_foreach``/``_while_loop``/``_cond`` nodes instead)."""
from __future__ import annotations

from ..base import flatten_nested, regroup_nested
from .ndarray import NDArray, invoke, zeros

__all__ = ['foreach', 'while_loop', 'cond']


def _flatten(args, inout_str):
    return flatten_nested(args, NDArray, inout_str)


_regroup = regroup_nested


def _as_list(obj):
    """A list of the loop variables: a list as it is, a tuple's items (Gluon's
    ``hybrid_forward(F, *loop_vars)`` hands on a tuple, as MXNet accepts), else ``[obj]``."""
    if isinstance(obj, tuple):
        return list(obj)
    return obj if isinstance(obj, list) else [obj]


def _to_python_scalar(inputs, type_, name):
    if hasattr(inputs, "asscalar"):
        inputs = inputs.asscalar()
    try:
        inputs = type_(inputs)
    except Exception:
        raise ValueError("Cannot convert %s to python %s" % (name, type_.__name__))
    return inputs


def _check_input(inputs, msg):
    items = inputs if isinstance(inputs, list) else [inputs]
    if not all(isinstance(i, NDArray) for i in items):
        raise TypeError(msg)


def foreach(body, data, init_states):
    """Run ``body`` over the slices of ``data`` along axis 0, as MXNet's
    ``mx.nd.contrib.foreach``: ``out, states = body(data[i], states)`` for each i; the
    outputs are stacked along axis 0.

    Parameters
    ----------
    body : callable
        ``body(data_slice, states) -> (outputs, new_states)``.
    data : NDArray or nested list of NDArrays
    init_states : NDArray or nested list of NDArrays

    Returns
    -------
    outputs, states : NDArray or nested lists of NDArrays
    """
    flatten, _ = _flatten(data, "foreach input")
    _check_input(flatten, "data should be an NDArray or a nested list of NDArrays")
    flatten, _ = _flatten(init_states, "foreach states")
    _check_input(flatten, "init_states should be an NDArray or a nested list of NDArrays")
    not_data_list = isinstance(data, NDArray)
    num_iters = data.shape[0] if not_data_list else data[0].shape[0]
    states = init_states
    outputs = []
    out_fmt = None
    for i in range(num_iters):
        eles = data[i] if not_data_list else [d[i] for d in data]
        outs, states = body(eles, states)
        outs, out_fmt = _flatten(outs, "foreach output")
        outputs.append(outs)
    if out_fmt is None:
        raise ValueError('foreach: the data have no element along axis 0, so the body never '
                         'ran and the outputs are unknown')
    outputs = [invoke('stack', list(out), {'num_args': len(out)}) for out in zip(*outputs)]
    outputs, _ = _regroup(outputs, out_fmt)
    return (outputs, states)


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Run ``func`` while ``cond`` holds, at most ``max_iterations`` times, as MXNet's
    ``mx.nd.contrib.while_loop``. The step outputs are stacked along axis 0 and padded to
    ``max_iterations`` rows (MXNet leaves the padding uninitialised; here it is zero).

    Parameters
    ----------
    cond : callable
        ``cond(*loop_vars)`` -> a scalar NDArray or Python value.
    func : callable
        ``func(*loop_vars) -> (step_output, new_loop_vars)``.
    loop_vars : NDArray or list of NDArrays
    max_iterations : int

    Returns
    -------
    outputs, states
    """
    def _func_wrapper(loop_vars):
        step_output, new_loop_vars = func(*loop_vars)
        if step_output is None:
            step_output = []
        if new_loop_vars is None:
            new_loop_vars = []
        if isinstance(step_output, tuple):
            step_output = list(step_output)
        if isinstance(new_loop_vars, tuple):
            new_loop_vars = list(new_loop_vars)
        new_loop_vars = _as_list(new_loop_vars)
        if len(loop_vars) != len(new_loop_vars):
            raise ValueError("The length of loop_vars should be consistent during the loop")
        return step_output, new_loop_vars

    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = _to_python_scalar(max_iterations, int, "max_iteration")
    if len(loop_vars) == 0:
        raise ValueError("loop_vars should contain at least one element")
    steps = 0
    outputs = []
    out_fmt = None
    not_loop_var_list = isinstance(loop_vars, NDArray)
    loop_vars = _as_list(loop_vars)
    while steps < max_iterations and \
            _to_python_scalar(cond(*loop_vars), bool, "Return value of cond"):
        step_output, loop_vars = _func_wrapper(loop_vars)
        step_output, out_fmt = _flatten(step_output, "while output")
        outputs.append(step_output)
        steps += 1
        if len(outputs) != steps or len(step_output) != len(outputs[0]):
            raise ValueError("Number of elements in step_output should be the same in each step")
    stacked_outputs = []
    for i_th, items in enumerate(zip(*outputs), 1):
        items = [invoke('expand_dims', [x], {'axis': 0}) for x in items]
        if steps != max_iterations and items:
            pad_shape = [max_iterations - steps] + list(items[0].shape[1:])
            items = list(items) + [zeros(tuple(pad_shape), ctx=items[0].context,
                                         dtype=items[0].dtype)]
        shapes = [x.shape[1:] for x in items]
        if any(s != shapes[0] for s in shapes):
            raise ValueError("\n".join(
                ["Shapes of %d-th elements in step_outputs are inconsistent, which are:" % i_th]
                + ["  Step %d, shape is %s" % (i, str(x.shape)) for i, x in enumerate(items)]))
        stacked_outputs.append(invoke('Concat', items, {'num_args': len(items), 'dim': 0}))
    if out_fmt is not None:
        stacked_outputs, _ = _regroup(stacked_outputs, out_fmt)
    if not_loop_var_list:
        loop_vars = loop_vars[0]
    return stacked_outputs, loop_vars


def cond(pred, then_func, else_func):
    """``then_func()`` if ``pred`` (a scalar) is non-zero, else ``else_func()``, as
    MXNet's ``mx.nd.contrib.cond``."""
    branch = _to_python_scalar(pred, bool, "pred")
    if branch:
        return then_func()
    return else_func()
