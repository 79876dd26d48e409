"""Lazy updates of row_sparse gradients: the optimizer update operators on a gradient's rows.

MXNet's update operators (``sgd_update``, ``sgd_mom_update``, ``mp_sgd_*``, ``adam_update``
with ``lazy_update=True``; ``ftrl_update`` on row_sparse weight and gradient; the sparse
AdaGrad) given a row_sparse gradient update only the rows the gradient stores: the other rows
of the weight and of the states (momentum, moments, history) keep their values, weight decay
included. symgraph's row_sparse arrays carry their rows (``RowSparseNDArray.indices``), so the
functions here run the dense operator on copies of those rows of every input that has the
weight's rows and write the results back; without a lazy update the dense operator runs as is
(a gradient that is zero outside its rows: MXNet's "standard" update). After MXNet 1.9.1's
``src/operator/optimizer_op-inl.h`` (which cases are lazy).
"""
from . import ndarray as _nd
from .sparse_array import RowSparseNDArray

__all__ = ['on_rows', 'LAZY_FUNCTIONS']


def on_rows(grad, arrays, fn):
    """Run ``fn(grad_rows, *array_rows)`` on copies of the rows ``grad`` (a RowSparseNDArray)
    stores, then write each of ``arrays``' row copies back (``fn`` updates them in place or
    through ``out=``). Arrays are the weight and the states: their first axis is the
    weight's rows. Returns ``fn``'s result."""
    rows = grad._rows()
    if len(rows) == 0:
        return None
    ctx = grad.context
    with ctx.device_scope():
        sel = ctx.xp.asarray(rows)
        subs = [None if a is None else _nd.NDArray(a._data[sel], a.context) for a in arrays]
        g = _nd.NDArray(grad._data[sel], ctx)
    res = fn(g, *subs)
    for a, sub in zip(arrays, subs):
        if a is not None:
            a._wrote()
            with a.context.device_scope():
                a._data[sel] = sub._data
    return res


def _lazy(name, lazy_when):
    """The mx.nd function of update operator ``name``: lazy on a row_sparse gradient where
    ``lazy_when(weight, grad, kwargs)`` says so, else the dense operator."""
    def fn(*args, **kwargs):
        arrays = list(args)
        grad = arrays[1] if len(arrays) > 1 else kwargs.get('grad')
        weight = arrays[0] if arrays else kwargs.get('weight')
        if len(arrays) < 2 or not isinstance(grad, RowSparseNDArray) \
                or not lazy_when(weight, grad, kwargs):
            return _nd.invoke(name, args, kwargs)
        out = kwargs.pop('out', None)
        n = weight.shape[0]
        # the inputs with the weight's rows (states, a float32 master copy) are sliced
        rowwise = [i for i, a in enumerate(arrays) if i != 1 and isinstance(a, _nd.NDArray)
                   and a.ndim >= 1 and a.shape[0] == n and a.size > 1]
        others = {i: a for i, a in enumerate(arrays) if i not in rowwise and i != 1}

        def run(g, *subs):
            call = [None] * len(arrays)
            call[1] = g
            for i, sub in zip(rowwise, subs):
                call[i] = sub
            for i, a in others.items():
                call[i] = a
            return _nd.invoke(name, tuple(call), dict(kwargs))
        dest = out if out is not None else weight.copy()
        rows = grad._rows()
        new = on_rows(grad, [arrays[i] for i in rowwise], run)
        if new is not None:
            dest._wrote()
            with dest.context.device_scope():
                dest._data[dest.context.xp.asarray(rows)] = new._data
        return dest
    fn.__name__ = name
    fn.__doc__ = ('MXNet\'s ``%s``; a row_sparse gradient updates only its rows where MXNet '
                  'updates lazily (ndarray/sparse_update.py).' % name)
    return fn


def _lazy_flag(weight, grad, kwargs):
    return bool(kwargs.get('lazy_update', True))


def _all_row_sparse(weight, grad, kwargs):
    return isinstance(weight, RowSparseNDArray)


def _always(weight, grad, kwargs):
    return True


def _sparse_adagrad(weight, grad, history, lr, epsilon, wd=0.0, rescale_grad=1.0,
                    clip_gradient=-1.0, out=None):
    """``mx.nd.sparse.adagrad_update`` (MXNet's ``_sparse_adagrad_update``): on a
    row_sparse gradient's rows, ``history += g**2; w -= lr * (g / sqrt(history + eps) +
    wd * w)`` with ``g = clip(rescale_grad * grad)``; other rows keep their values."""
    def body(g, w, h):
        g = g * rescale_grad
        if clip_gradient is not None and clip_gradient >= 0:
            g = _nd.invoke('clip', (g,), {'a_min': -clip_gradient, 'a_max': clip_gradient})
        h[:] += g * g
        div = g / _nd.invoke('sqrt', (h + epsilon,), {})
        w[:] += (div + w * wd) * -lr
    dest = weight if out is None else out
    if isinstance(grad, RowSparseNDArray):
        on_rows(grad, [weight, history], body)
    else:
        body(grad, weight, history)
    if dest is not weight:
        weight.copyto(dest)
    return dest


LAZY_FUNCTIONS = {
    'sgd_update': _lazy('sgd_update', _lazy_flag),
    'sgd_mom_update': _lazy('sgd_mom_update', _lazy_flag),
    'mp_sgd_update': _lazy('mp_sgd_update', _lazy_flag),
    'mp_sgd_mom_update': _lazy('mp_sgd_mom_update', _lazy_flag),
    'adam_update': _lazy('adam_update', _lazy_flag),
    'ftrl_update': _lazy('ftrl_update', _all_row_sparse),
    '_contrib_group_adagrad_update': _lazy('_contrib_group_adagrad_update', _always),
    '_sparse_adagrad_update': _sparse_adagrad,
}
