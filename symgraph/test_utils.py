"""Testing helpers with MXNet's names (``mx.test_utils``)."""
from __future__ import annotations

import numpy as np

from .context import current_context
from .ndarray import NDArray, array

__all__ = ['default_context', 'set_default_context', 'assert_almost_equal', 'almost_equal',
           'same', 'check_numeric_gradient', 'check_symbolic_forward',
           'check_symbolic_backward', 'random_arrays', 'rand_ndarray', 'numeric_grad']

_default_ctx = [None]


def default_context():
    return _default_ctx[0] or current_context()


def set_default_context(ctx):
    _default_ctx[0] = ctx


def _np(a):
    return a.asnumpy() if isinstance(a, NDArray) else np.asarray(a)


def same(a, b):
    return np.array_equal(_np(a), _np(b))


def almost_equal(a, b, rtol=1e-5, atol=1e-20, equal_nan=False):
    return np.allclose(_np(a), _np(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal(a, b, rtol=1e-5, atol=1e-20, names=('a', 'b'), equal_nan=False):
    """Assert closeness, reporting the worst element and its location."""
    a, b = _np(a), _np(b)
    if a.shape != b.shape:
        raise AssertionError('shape mismatch: %s %s vs %s %s' % (names[0], a.shape, names[1],
                                                                 b.shape))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan,
                               err_msg='%s vs %s' % names)


def random_arrays(*shapes):
    arrays = [np.random.randn(*s).astype(np.float32) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def rand_ndarray(shape, stype='default', density=None, dtype=None, ctx=None):
    return array(np.random.uniform(-1, 1, shape), ctx=ctx, dtype=dtype or np.float32)


def _location(sym, location, ctx, dtype):
    if isinstance(location, dict):
        missing = set(sym.list_arguments()) - set(location)
        if missing:
            raise ValueError('location lacks arguments %s' % sorted(missing))
        location = {k: location[k] for k in sym.list_arguments()}
    else:
        location = dict(zip(sym.list_arguments(), location))
    return {k: array(_np(v), ctx=ctx, dtype=dtype or _np(v).dtype)
            for k, v in location.items()}


def _aux(sym, aux_states, ctx, dtype):
    if aux_states is None:
        return None
    if isinstance(aux_states, dict):
        return {k: array(_np(v), ctx=ctx, dtype=dtype or _np(v).dtype)
                for k, v in aux_states.items()}
    return {k: array(_np(v), ctx=ctx, dtype=dtype or _np(v).dtype)
            for k, v in zip(sym.list_auxiliary_states(), aux_states)}


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=np.float64, projection=None):
    """Central differences of ``sum(output * projection)`` at ``location``."""
    grads = {}
    base_aux = {k: v.asnumpy() for k, v in executor.aux_dict.items()}

    def f():
        for k, v in base_aux.items():
            executor.aux_dict[k][:] = v
        outs = executor.forward(is_train=use_forward_train)
        return sum(float((o.asnumpy().astype(np.float64) * p).sum())
                   for o, p in zip(outs, projection))
    for name, arr in location.items():
        x = executor.arg_dict[name]
        v = x.asnumpy().astype(dtype)
        g = np.zeros_like(v)
        flat, gflat = v.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            x[:] = v
            fp = f()
            flat[i] = old - eps
            x[:] = v
            fm = f()
            flat[i] = old
            gflat[i] = (fp - fm) / (2 * eps)
        x[:] = v
        grads[name] = g
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=1e-3, rtol=1e-2,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=np.float64):
    """Compare the symbolic gradient of ``sum(out * random projection)`` with central
    differences, as MXNet's test utility does. Runs in float64 by default."""
    ctx = ctx or default_context()
    loc = _location(sym, location, ctx, dtype)
    aux = _aux(sym, aux_states, ctx, dtype)
    if grad_nodes is None:
        grad_nodes = [k for k in sym.list_arguments()]
    if isinstance(grad_nodes, dict):
        reqs = {k: grad_nodes.get(k, 'null') for k in sym.list_arguments()}
    else:
        reqs = {k: ('write' if k in grad_nodes else 'null') for k in sym.list_arguments()}
    grads = {k: array(np.zeros(v.shape), ctx=ctx, dtype=v.dtype) for k, v in loc.items()}
    exe = sym.bind(ctx, loc, args_grad=grads, grad_req=reqs, aux_states=aux)
    base_aux = {k: v.asnumpy() for k, v in exe.aux_dict.items()}
    outs = exe.forward(is_train=use_forward_train)
    rng = np.random.RandomState(1234)
    proj = [rng.normal(0, 1, o.shape) for o in outs]
    heads = [array(p, ctx=ctx, dtype=o.dtype) for p, o in zip(proj, outs)]
    exe.backward(heads)
    symbolic = {k: exe.grad_dict[k].asnumpy() for k in grad_nodes
                if exe.grad_dict.get(k) is not None}
    for k, v in base_aux.items():
        exe.aux_dict[k][:] = v
    numeric = numeric_grad(exe, {k: loc[k] for k in symbolic}, eps=numeric_eps,
                           use_forward_train=use_forward_train, dtype=dtype, projection=proj)
    for name in symbolic:
        np.testing.assert_allclose(symbolic[name], numeric[name], rtol=rtol,
                                   atol=1e-6 if atol is None else atol,
                                   err_msg='gradient of %r: symbolic vs numeric' % name)


def check_symbolic_forward(sym, location, expected, rtol=1e-4, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32):
    """Bind ``location``, run forward (inference) and compare with ``expected``."""
    ctx = ctx or default_context()
    loc = _location(sym, location, ctx, dtype)
    aux = _aux(sym, aux_states, ctx, dtype)
    exe = sym.bind(ctx, loc, aux_states=aux)
    outs = exe.forward(is_train=False)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    for name, o, e in zip(sym.list_outputs(), outs, expected):
        assert_almost_equal(o, e, rtol=rtol, atol=1e-20 if atol is None else atol,
                            names=('output %s' % name, 'expected'), equal_nan=equal_nan)
    return [o.asnumpy() for o in outs]


def check_symbolic_backward(sym, location, out_grads, expected, rtol=1e-5, atol=None,
                            aux_states=None, grad_req='write', ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Bind, run a training forward and backward with ``out_grads``, compare gradients."""
    ctx = ctx or default_context()
    loc = _location(sym, location, ctx, dtype)
    aux = _aux(sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    grads = {k: array(np.zeros(v.shape), ctx=ctx, dtype=v.dtype) for k, v in loc.items()}
    if isinstance(grad_req, str):
        grad_req = {k: grad_req for k in sym.list_arguments()}
    exe = sym.bind(ctx, loc, args_grad=grads, grad_req=grad_req, aux_states=aux)
    exe.forward(is_train=True)
    if out_grads is not None:
        if isinstance(out_grads, dict):
            out_grads = [out_grads[k] for k in sym.list_outputs()]
        out_grads = [array(_np(g), ctx=ctx, dtype=dtype) for g in out_grads]
    exe.backward(out_grads)
    for name, e in expected.items():
        if grad_req.get(name, 'write') == 'null':
            continue
        assert_almost_equal(exe.grad_dict[name], e, rtol=rtol,
                            atol=1e-20 if atol is None else atol,
                            names=('gradient %s' % name, 'expected'), equal_nan=equal_nan)
    return {k: v.asnumpy() for k, v in exe.grad_dict.items() if v is not None}



