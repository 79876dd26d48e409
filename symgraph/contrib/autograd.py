"""``mx.contrib.autograd``: MXNet's first, experimental autograd API (after MXNet 1.9.1's
python/mxnet/contrib/autograd.py), kept for programs written against it.

It is a thin layer over :mod:`symgraph.autograd`: ``train_section()`` records in training
mode, ``test_section()`` neither records nor trains (MXNet's ``set_is_training`` sets both
flags at once), ``grad_and_loss(func)`` wraps a function so that it returns the gradients
of its arguments with its result.

>>> import symgraph as mx
>>> from symgraph.contrib import autograd as cag
>>> f = cag.grad_and_loss(lambda x: x * x)
>>> grads, loss = f(mx.nd.array([1.0, 3.0]))
>>> grads[0].asnumpy().tolist(), loss.asnumpy().tolist()
([2.0, 6.0], [1.0, 9.0])
"""
from __future__ import annotations

import functools

from .. import autograd as _ag
from ..base import ArgumentTypeError
from ..ndarray import NDArray, zeros_like

__all__ = ['set_is_training', 'TrainingStateScope', 'train_section', 'test_section',
           'mark_variables', 'backward', 'compute_gradient', 'grad_and_loss', 'grad']


def set_is_training(is_train):
    """Turn training and recording on or off together; returns the previous state
    (MXNet's contrib API has one flag for both)."""
    prev = _ag.set_training(is_train)
    _ag.set_recording(is_train)
    return prev


class TrainingStateScope:
    """Scope that sets the training-and-recording state on entry and puts the previous
    one back on exit."""

    def __init__(self, enter_state):
        self._enter_state = bool(enter_state)
        self._prev = None
        self._prev_recording = None

    def __enter__(self):
        self._prev_recording = _ag.is_recording()
        self._prev = set_is_training(self._enter_state)

    def __exit__(self, ptype, value, trace):
        # both flags back as they were, also where MXNet's contrib scope (which restores
        # them as one) would leave recording switched by an enclosing mx.autograd scope
        _ag.set_training(self._prev)
        _ag.set_recording(self._prev_recording)


def train_section():
    """Scope that records and runs operators in training mode."""
    return TrainingStateScope(True)


def test_section():
    """Scope that neither records nor runs operators in training mode."""
    return TrainingStateScope(False)


def mark_variables(variables, gradients, grad_reqs='write'):
    """Make ``variables`` autograd variables whose gradients go into ``gradients``."""
    _ag.mark_variables(variables, gradients, grad_reqs)


def backward(outputs, out_grads=None, retain_graph=False):
    """Gradients of ``outputs`` (a list of NDArrays) into the marked variables' gradient
    arrays; ``out_grads`` holds one head gradient or None (ones) per output."""
    if not isinstance(outputs, (list, tuple)):
        raise ArgumentTypeError('backward: outputs must be a list or tuple of NDArrays, got %s'
                                % type(outputs).__name__)
    if out_grads is not None and len(out_grads) != len(outputs):
        raise ArgumentTypeError('backward: %d outputs but %d out_grads'
                                % (len(outputs), len(out_grads)))
    _ag.backward(list(outputs), None if out_grads is None else list(out_grads),
                 retain_graph=retain_graph)


def compute_gradient(outputs):
    """Deprecated name of :func:`backward` without head gradients."""
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """Wrap ``func`` so that a call returns ``(gradients, outputs)``: the gradients of the
    arguments numbered ``argnum`` (an int or a list; all by default) and ``func``'s
    result."""
    @functools.wraps(func)
    def wrapped(*args):
        variables = args
        if argnum is not None:
            nums = argnum if isinstance(argnum, list) else [argnum]
            variables = [args[i] for i in nums]
        for k, x in enumerate(variables):
            if not isinstance(x, NDArray):
                raise ArgumentTypeError('grad_and_loss: argument %d to differentiate must '
                                        'be an NDArray, got %s' % (k, type(x).__name__))
        grads = [zeros_like(x) for x in variables]
        mark_variables(list(variables), grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func, argnum=None):
    """Wrap ``func`` so that a call returns the gradients of its arguments (see
    :func:`grad_and_loss`)."""
    grad_with_loss_func = grad_and_loss(func, argnum)

    @functools.wraps(grad_with_loss_func)
    def wrapped(*args):
        return grad_with_loss_func(*args)[0]
    return wrapped
